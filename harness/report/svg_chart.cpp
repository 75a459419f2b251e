#include "report/svg_chart.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <sstream>
#include <stdexcept>

#include "util/format.h"

namespace recipebench::svg {

namespace {

constexpr const char* kInk = "#1d2330";   // axes and text: black in grey-scale
constexpr const char* kDark = "#1f3b73";  // the best bar, recipe points, lines: dark grey in grey-scale
constexpr const char* kMid = "#7d97c2";   // the other bars: mid grey
constexpr const char* kGrid = "#d5dae3";
constexpr double kLabelFont = 11;  // px, the scatter's rank labels

/// A coordinate with at most one decimal ("12.5", "40").
std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  std::string s = buf;
  if (s.size() > 2 && s.compare(s.size() - 2, 2, ".0") == 0) s.resize(s.size() - 2);
  return s == "-0" ? "0" : s;
}

std::string open_svg(const std::string& id, const std::string& title, double w, double h) {
  std::ostringstream o;
  o << "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"chart\" id=\"" << escape_xml(id) << "\" viewBox=\"0 0 "
    << num(w) << " " << num(h) << "\" width=\"" << num(w) << "\" height=\"" << num(h)
    << "\" role=\"img\" aria-labelledby=\"" << escape_xml(id) << "-t\"><title id=\"" << escape_xml(id) << "-t\">"
    << escape_xml(title)
    << "</title>"
    // Diagonal hatching: the shaded regions read as hatched in grey-scale print.
    << "<defs><pattern id=\"" << escape_xml(id) << "-hatch\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\" "
    << "patternTransform=\"rotate(45)\"><line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"6\" stroke=\"#8a93a3\" "
    << "stroke-width=\"1.5\"/></pattern></defs>";
  return o.str();
}

std::string text(double x, double y, const std::string& s, const char* anchor, const char* extra = "") {
  std::ostringstream o;
  o << "<text x=\"" << num(x) << "\" y=\"" << num(y) << "\" text-anchor=\"" << anchor << "\"" << extra << ">"
    << escape_xml(s) << "</text>";
  return o.str();
}

/// Vertical grid lines with labels under the plot, and the x axis title.
std::string x_axis(const Frame& f, const Scale& x, const std::vector<double>& ticks, const std::string& title) {
  std::ostringstream o;
  const double step = ticks.size() > 1 ? ticks[1] - ticks[0] : 1;
  o << "<g class=\"axis x\" font-size=\"11\" fill=\"" << kInk << "\">";
  for (double t : ticks) {
    const double px = x(t);
    o << "<line x1=\"" << num(px) << "\" y1=\"" << num(f.y0()) << "\" x2=\"" << num(px) << "\" y2=\"" << num(f.y1())
      << "\" stroke=\"" << kGrid << "\"/>" << text(px, f.y1() + 14, tick_label(t, step), "middle");
  }
  o << "<line x1=\"" << num(f.x0()) << "\" y1=\"" << num(f.y1()) << "\" x2=\"" << num(f.x1()) << "\" y2=\""
    << num(f.y1()) << "\" stroke=\"" << kInk << "\"/>"
    << text((f.x0() + f.x1()) / 2, f.height - 6, title, "middle", " class=\"axis-title\" font-size=\"12\"") << "</g>";
  return o.str();
}

/// Horizontal grid lines with labels left of the plot, and the y axis title (rotated).
std::string y_axis(const Frame& f, const Scale& y, const std::vector<double>& ticks, const std::string& title) {
  std::ostringstream o;
  const double step = ticks.size() > 1 ? ticks[1] - ticks[0] : 1;
  o << "<g class=\"axis y\" font-size=\"11\" fill=\"" << kInk << "\">";
  for (double t : ticks) {
    const double py = y(t);
    o << "<line x1=\"" << num(f.x0()) << "\" y1=\"" << num(py) << "\" x2=\"" << num(f.x1()) << "\" y2=\"" << num(py)
      << "\" stroke=\"" << kGrid << "\"/>" << text(f.x0() - 5, py + 4, tick_label(t, step), "end");
  }
  o << "<line x1=\"" << num(f.x0()) << "\" y1=\"" << num(f.y0()) << "\" x2=\"" << num(f.x0()) << "\" y2=\""
    << num(f.y1()) << "\" stroke=\"" << kInk << "\"/>";
  const double cy = (f.y0() + f.y1()) / 2;
  o << "<text x=\"12\" y=\"" << num(cy) << "\" text-anchor=\"middle\" class=\"axis-title\" font-size=\"12\" "
    << "transform=\"rotate(-90 12 " << num(cy) << ")\">" << escape_xml(title) << "</text></g>";
  return o.str();
}

/// `s` cut (on a UTF-8 character boundary, with "…") to fit `room` px at `font_px` (svg::text_width).
std::string fit_text(const std::string& s, double font_px, double room) {
  if (text_width(s, font_px) <= room) return s;
  std::string cut = s;
  while (!cut.empty() && text_width(cut + "…", font_px) > room) {
    // One code point off the end: its continuation bytes, then its lead (or ASCII) byte.
    while (!cut.empty() && (static_cast<unsigned char>(cut.back()) & 0xC0) == 0x80) cut.pop_back();
    if (!cut.empty()) cut.pop_back();
  }
  return cut + "…";
}

double max_of(const std::vector<double>& v) { return v.empty() ? 0 : *std::max_element(v.begin(), v.end()); }
double min_of(const std::vector<double>& v) { return v.empty() ? 0 : *std::min_element(v.begin(), v.end()); }

}  // namespace

std::string escape_xml(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

namespace {

/// The tick step for a span of 2 x `half` over about `target` ticks: 1, 2 or 5 x 10^k at least the raw step.
/// The raw step is capped at 9e307 so that 10^k is at most 1e307 and the step (at most 10 x 10^k) finite.
double tick_step(double half, int target) {
  const double raw = std::min(half / target * 2, 9e307);
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0})
    if (m * mag >= raw) return m * mag;
  return 10 * mag;
}

}  // namespace

std::vector<double> nice_ticks(double lo, double hi, int target) {
  if (!std::isfinite(lo) || !std::isfinite(hi)) throw std::invalid_argument("nice_ticks: a bound that is not finite");
  if (!(lo <= hi)) throw std::invalid_argument("nice_ticks: lo > hi");
  target = std::clamp(target, 1, 1000);  // k below stays an exact integer (|k| <= 5e11)
  // Halves throughout: hi - lo itself overflows for bounds of opposite sign near the largest double.
  const double size = std::max(std::abs(lo), std::abs(hi));
  double half = hi / 2 - lo / 2;
  // The narrowest range drawn: a flat one is widened to +-0.5 or a millionth of its value, whichever is wider (at
  // |v| >= 2^53 a +-0.5 is lost to rounding); any range to a billionth of its value, so that steps stay far above
  // the spacing of doubles there.
  const double least = lo == hi ? std::max(0.5, size * 1e-6) : std::max(size * 1e-9, 1e-300);
  if (half < least) {
    const double mid = lo / 2 + hi / 2;
    half = least;
    lo = std::max(mid - half, -std::numeric_limits<double>::max());
    hi = std::min(mid + half, std::numeric_limits<double>::max());
  }
  const double step = tick_step(half, target);
  // Ticks as k x step (never a running sum, which stalls where step is below the spacing of doubles); a tick past
  // the largest double is the range's own end.
  const double k_first = std::floor(lo / step + 1e-9), k_last = std::ceil(hi / step - 1e-9);
  std::vector<double> ticks;
  for (double k = k_first; k <= k_last; ++k) ticks.push_back(k * step);
  // k x step rounds: near the largest doubles it can land an ulp inside the range, and past them it is infinite.
  if (!std::isfinite(ticks.front()) || ticks.front() > lo) ticks.front() = lo;
  if (!std::isfinite(ticks.back()) || ticks.back() < hi) ticks.back() = hi;
  return ticks;
}

std::string tick_label(double value, double step) {
  if (std::abs(value) >= 1e15) return shortest(value);
  int decimals = 0;
  while (decimals < 6 && std::abs(step * std::pow(10.0, decimals) - std::round(step * std::pow(10.0, decimals))) > 1e-6)
    ++decimals;
  return fixed(value, decimals);
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

BarLayout layout_bars(const std::vector<Bar>& bars, double width, size_t max_bars) {
  BarLayout L;
  L.total = bars.size();
  L.shown = std::min(bars.size(), max_bars);
  const bool details = std::any_of(bars.begin(), bars.begin() + static_cast<std::ptrdiff_t>(L.shown),
                                   [](const Bar& b) { return !b.detail.empty(); });
  const double kRow = details ? 36 : 24, kBar = 16;
  L.frame = Frame{width, 0, 230, 70, 8, 44};
  L.frame.height = L.frame.top + kRow * static_cast<double>(L.shown) + L.frame.bottom;
  double top_value = 0;
  for (size_t i = 0; i < L.shown; ++i) top_value = std::max(top_value, bars[i].value);
  L.ticks = nice_ticks(0, top_value);
  L.x = Scale{0, L.ticks.back(), L.frame.x0(), L.frame.x1()};
  for (size_t i = 0; i < L.shown; ++i)
    L.rows.push_back(Rect{L.frame.x0(), L.frame.top + kRow * static_cast<double>(i) + (kRow - kBar) / 2,
                          L.x(bars[i].value) - L.frame.x0(), kBar});
  return L;
}

std::string bar_chart_svg(const std::vector<Bar>& bars, const std::string& chart_id, const std::string& title) {
  const BarLayout L = layout_bars(bars, 760);
  std::ostringstream o;
  o << open_svg(chart_id, title, L.frame.width, L.frame.height);
  o << x_axis(L.frame, L.x, L.ticks, "tokens/s per GPU (measured)");
  o << "<g class=\"bars\" font-size=\"12\" fill=\"" << kInk << "\">";
  const double room = L.frame.x0() - 12;  // label column width, px
  for (size_t i = 0; i < L.shown; ++i) {
    const Rect& r = L.rows[i];
    const Bar& b = bars[i];
    const std::string label = fit_text("#" + std::to_string(b.rank) + "  " + b.label, 12, room);
    const std::string full = "#" + std::to_string(b.rank) + " " + b.label + (b.detail.empty() ? "" : " (" + b.detail + ")");
    o << "<g class=\"bar\" data-id=\"" << escape_xml(b.id) << "\"><title>"
      << escape_xml(full + ": " + fixed(b.value, 1) + " tokens/s/GPU") << "</title>";
    if (b.detail.empty()) {
      o << text(L.frame.x0() - 8, r.y + 12, label, "end");
    } else {
      o << text(L.frame.x0() - 8, r.y + 5, label, "end", " class=\"bar-label\"")
        << text(L.frame.x0() - 8, r.y + 18, fit_text(b.detail, 10.5, room), "end",
                " class=\"bar-detail\" font-size=\"10.5\" fill=\"#4a5262\"");
    }
    o << "<rect x=\"" << num(r.x) << "\" y=\""
      << num(r.y) << "\" width=\"" << num(r.width) << "\" height=\"" << num(r.height) << "\" fill=\""
      << (i == 0 ? kDark : kMid) << "\" stroke=\"" << kDark << "\"/>"
      << text(r.x + r.width + 5, r.y + 12, fixed(b.value, 1), "start") << "</g>";
  }
  o << "</g>";
  if (L.shown < L.total)
    o << text(L.frame.x1(), L.frame.height - 6, "top " + std::to_string(L.shown) + " of " + std::to_string(L.total),
              "end", " font-size=\"11\"");
  o << "</svg>";
  return o.str();
}

ScatterLayout layout_scatter(const std::vector<ScatterPoint>& pts, double width, double height) {
  ScatterLayout L;
  L.frame = Frame{width, height, 64, 20, 14, 44};
  std::vector<double> xs, ys;
  for (const auto& p : pts) xs.push_back(p.x), ys.push_back(p.y);
  L.x_ticks = nice_ticks(0, max_of(xs));
  L.y_ticks = nice_ticks(0, max_of(ys));
  L.x = Scale{0, L.x_ticks.back(), L.frame.x0(), L.frame.x1()};
  L.y = Scale{0, L.y_ticks.back(), L.frame.y1(), L.frame.y0()};
  for (const auto& p : pts) L.points.push_back(Point{L.x(p.x), L.y(p.y)});
  L.median_x = median(xs);
  L.median_y = median(ys);
  const double cx = L.x(L.median_x), cy = L.y(L.median_y);
  L.corner = Rect{cx, cy, L.frame.x1() - cx, L.frame.y1() - cy};
  return L;
}

std::string scatter_svg(const std::vector<ScatterPoint>& pts, const std::string& chart_id, const std::string& title) {
  const ScatterLayout L = layout_scatter(pts, 520, 320);
  std::ostringstream o;
  o << open_svg(chart_id, title, L.frame.width, L.frame.height);
  o << "<rect class=\"corner\" x=\"" << num(L.corner.x) << "\" y=\"" << num(L.corner.y) << "\" width=\""
    << num(L.corner.width) << "\" height=\"" << num(L.corner.height) << "\" fill=\"url(#" << escape_xml(chart_id)
    << "-hatch)\" stroke=\"#8a93a3\" stroke-dasharray=\"4 3\"/>";
  o << x_axis(L.frame, L.x, L.x_ticks, "tokens/s per GPU (measured)");
  o << y_axis(L.frame, L.y, L.y_ticks, "$ per 1M tokens (computed)");
  o << text(L.frame.x1() - 4, L.frame.y1() - 6, "cheaper and faster than the medians", "end",
            " class=\"corner-label\" font-size=\"11\" font-weight=\"600\"");
  const LabelPlacement placed = place_labels(pts, L, kLabelFont);
  o << "<g class=\"points\" fill=\"" << kInk << "\">";
  for (size_t i = 0; i < pts.size(); ++i) {
    const Point& p = L.points[i];
    const ScatterPoint& s = pts[i];
    o << "<g class=\"point\" data-id=\"" << escape_xml(s.id) << "\"><title>"
      << escape_xml("#" + std::to_string(s.rank) + " " + s.label + ": " + fixed(s.x, 1) + " tokens/s/GPU, $" +
                    fixed(s.y, 2) + " per 1M tokens")
      << "</title>";
    if (s.measured_run)  // a hollow square: run records
      o << "<rect x=\"" << num(p.x - 5) << "\" y=\"" << num(p.y - 5) << "\" width=\"10\" height=\"10\" fill=\"#fff\" "
        << "stroke=\"" << kDark << "\" stroke-width=\"2\"/>";
    else  // a filled circle: recipes
      o << "<circle cx=\"" << num(p.x) << "\" cy=\"" << num(p.y) << "\" r=\"5\" fill=\"" << kDark << "\"/>";
    o << "</g>";
  }
  o << "</g><g class=\"labels\" font-size=\"" << num(kLabelFont) << "\" fill=\"" << kInk << "\">";
  for (size_t i = 0; i < pts.size(); ++i) {
    const Rect& b = placed.labels[i];
    if (b.width <= 0) continue;
    const Point& p = L.points[i];
    if (placed.leader[i]) {  // from the marker's edge to the nearest point of the label's box
      const double tx = std::clamp(p.x, b.x, b.x + b.width), ty = std::clamp(p.y, b.y, b.y + b.height);
      o << "<line class=\"leader\" x1=\"" << num(p.x) << "\" y1=\"" << num(p.y) << "\" x2=\"" << num(tx)
        << "\" y2=\"" << num(ty) << "\" stroke=\"#8a93a3\"/>";
    }
    o << "<text class=\"point-label\" data-id=\"" << escape_xml(pts[i].id) << "\" x=\"" << num(b.x + 1)
      << "\" y=\"" << num(b.y + kLabelFont) << "\">" << escape_xml("#" + std::to_string(pts[i].rank)) << "</text>";
  }
  o << "</g></svg>";
  return o.str();
}

double text_width(const std::string& s, double font_px) {
  double em = 0;
  for (unsigned char c : s)
    if ((c & 0xC0) != 0x80) em += c == ' ' ? 0.35 : 0.62;
  return em * font_px;
}

bool intersects(const Rect& a, const Rect& b) {
  return a.x < b.x + b.width && b.x < a.x + a.width && a.y < b.y + b.height && b.y < a.y + a.height;
}

namespace {

bool inside(const Rect& box, const Rect& area) {
  return box.x >= area.x && box.y >= area.y && box.x + box.width <= area.x + area.width &&
         box.y + box.height <= area.y + area.height;
}

/// The candidate box of a w x h label at distance `d` from point `p` in direction `dir` (0 right, 1 left, 2 above,
/// 3 below, 4-7 the diagonals: up-right, up-left, down-right, down-left).
Rect candidate(const Point& p, int dir, double d, double w, double h) {
  const double k = d * 0.7071;
  switch (dir) {
    case 0: return {p.x + d, p.y - h / 2, w, h};
    case 1: return {p.x - d - w, p.y - h / 2, w, h};
    case 2: return {p.x - w / 2, p.y - d - h, w, h};
    case 3: return {p.x - w / 2, p.y + d, w, h};
    case 4: return {p.x + k, p.y - k - h, w, h};
    case 5: return {p.x - k - w, p.y - k - h, w, h};
    case 6: return {p.x + k, p.y + k, w, h};
    default: return {p.x - k - w, p.y + k, w, h};
  }
}

}  // namespace

LabelPlacement place_labels(const std::vector<ScatterPoint>& pts, const ScatterLayout& L, double font_px,
                            size_t max_labels, double max_distance) {
  LabelPlacement out;
  out.labels.assign(pts.size(), Rect{});
  out.leader.assign(pts.size(), false);
  std::vector<size_t> order(pts.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&pts](size_t a, size_t b) { return pts[a].rank < pts[b].rank; });
  if (order.size() > max_labels) order.resize(max_labels);
  std::vector<Rect> markers;
  for (const Point& p : L.points) markers.push_back(Rect{p.x - 6, p.y - 6, 12, 12});
  const Rect area{L.frame.x0(), L.frame.y0(), L.frame.x1() - L.frame.x0(), L.frame.y1() - L.frame.y0()};
  std::vector<Rect> placed;
  const auto is_free = [&](const Rect& box) {
    if (!inside(box, area)) return false;
    for (const Rect& r : placed)
      if (intersects(box, r)) return false;
    for (const Rect& m : markers)
      if (intersects(box, m)) return false;
    return true;
  };
  for (size_t i : order) {
    const double w = text_width("#" + std::to_string(pts[i].rank), font_px) + 2, h = font_px * 1.25;
    bool found = false;
    for (double d = 7; d <= max_distance && !found; d += 5)
      for (int dir = 0; dir < 8 && !found; ++dir) {
        const Rect box = candidate(L.points[i], dir, d, w, h);
        if (!is_free(box)) continue;
        out.labels[i] = box;
        out.leader[i] = d > 12;
        placed.push_back(box);
        found = true;
      }
  }
  return out;
}

StepLayout layout_steps(const std::vector<double>& values, int window_first, int window_last, bool from_zero,
                        double width, double height) {
  StepLayout L;
  L.frame = Frame{width, height, 64, 14, 12, 44};
  const double n = static_cast<double>(values.size());
  L.x = Scale{-0.5, std::max(0.5, n - 0.5), L.frame.x0(), L.frame.x1()};
  for (double t : nice_ticks(0, std::max(0.0, n - 1), 8))
    if (t >= 0 && t <= n - 1 && t == std::floor(t)) L.x_ticks.push_back(t);
  L.y_ticks = nice_ticks(from_zero ? 0 : min_of(values), max_of(values));
  L.y = Scale{L.y_ticks.front(), L.y_ticks.back(), L.frame.y1(), L.frame.y0()};
  for (size_t i = 0; i < values.size(); ++i) L.points.push_back(Point{L.x(static_cast<double>(i)), L.y(values[i])});
  if (window_last >= window_first) {
    const double a = L.x(window_first - 0.5), b = L.x(window_last + 0.5);
    L.window = Rect{a, L.frame.y0(), b - a, L.frame.y1() - L.frame.y0()};
  } else {
    L.window = Rect{L.frame.x0(), L.frame.y0(), 0, L.frame.y1() - L.frame.y0()};
  }
  return L;
}

std::string steps_svg(const std::vector<double>& values, int window_first, int window_last, const StepStyle& style,
                      const std::string& chart_id, const std::string& title) {
  const StepLayout L = layout_steps(values, window_first, window_last, style.from_zero, 420, 240);
  std::ostringstream o;
  o << open_svg(chart_id, title, L.frame.width, L.frame.height);
  if (L.window.width > 0)
    o << "<rect class=\"window\" x=\"" << num(L.window.x) << "\" y=\"" << num(L.window.y) << "\" width=\""
      << num(L.window.width) << "\" height=\"" << num(L.window.height) << "\" fill=\"url(#" << escape_xml(chart_id)
      << "-hatch)\" opacity=\"0.6\"/>"
      << text(L.window.x + L.window.width / 2, L.frame.y0() + 12,
              "timed window " + std::to_string(window_first) + ".." + std::to_string(window_last), "middle",
              " class=\"window-label\" font-size=\"11\" font-weight=\"600\"");
  o << x_axis(L.frame, L.x, L.x_ticks, "step");
  o << y_axis(L.frame, L.y, L.y_ticks, style.y_title);
  o << "<polyline class=\"series\" fill=\"none\" stroke=\"" << kDark << "\" stroke-width=\"2\""
    << (style.dashed ? " stroke-dasharray=\"6 3\"" : "") << " points=\"";
  for (size_t i = 0; i < L.points.size(); ++i) o << (i ? " " : "") << num(L.points[i].x) << "," << num(L.points[i].y);
  o << "\"/><g class=\"markers\" fill=\"" << kDark << "\">";
  for (size_t i = 0; i < L.points.size(); ++i) {
    const Point& p = L.points[i];
    o << "<g><title>step " << i << ": " << escape_xml(shortest(values[i])) << "</title>";
    if (style.square_markers)
      o << "<rect x=\"" << num(p.x - 3) << "\" y=\"" << num(p.y - 3) << "\" width=\"6\" height=\"6\"/>";
    else
      o << "<circle cx=\"" << num(p.x) << "\" cy=\"" << num(p.y) << "\" r=\"3\"/>";
    o << "</g>";
  }
  o << "</g></svg>";
  return o.str();
}

ScatterLayout layout_pareto(const std::vector<ParetoMark>& marks, double width, double height) {
  std::vector<ScatterPoint> pts;
  for (const ParetoMark& m : marks) pts.push_back({m.id, m.label, m.rank, m.x, m.y, m.run});
  ScatterLayout L = layout_scatter(pts, width, height);
  L.corner = Rect{};  // no median corner: the front says what is worth having
  return L;
}

namespace {

/// A point's marker: a square for a run, a circle for a recipe; filled when on the front, else hollow.
std::string pareto_marker(const Point& p, const ParetoMark& m) {
  std::ostringstream o;
  const std::string fill = m.front ? kDark : "#fff";
  if (m.run)
    o << "<rect x=\"" << num(p.x - 5) << "\" y=\"" << num(p.y - 5) << "\" width=\"10\" height=\"10\" fill=\"" << fill
      << "\" stroke=\"" << kDark << "\" stroke-width=\"2\"/>";
  else
    o << "<circle cx=\"" << num(p.x) << "\" cy=\"" << num(p.y) << "\" r=\"5\" fill=\"" << fill << "\" stroke=\""
      << kDark << "\" stroke-width=\"2\"/>";
  return o.str();
}

/// The front as a dashed step line through its points, fastest first: each step says "no cheaper without slower".
std::string front_line(const std::vector<ParetoMark>& marks, const ScatterLayout& L) {
  std::vector<size_t> on;
  for (size_t i = 0; i < marks.size(); ++i)
    if (marks[i].front) on.push_back(i);
  std::sort(on.begin(), on.end(), [&marks](size_t a, size_t b) { return marks[a].x < marks[b].x; });
  if (on.size() < 2) return "";
  std::ostringstream o;
  o << "<polyline class=\"front\" fill=\"none\" stroke=\"" << kDark << "\" stroke-width=\"1.5\" "
    << "stroke-dasharray=\"5 3\" points=\"";
  for (size_t k = 0; k < on.size(); ++k) {
    const Point& p = L.points[on[k]];
    if (k > 0) o << " " << num(p.x) << "," << num(L.points[on[k - 1]].y);  // across, then down
    o << (k ? " " : "") << num(p.x) << "," << num(p.y);
  }
  o << "\"/>";
  return o.str();
}

}  // namespace

std::string pareto_svg(const std::vector<ParetoMark>& marks, const std::string& chart_id, const std::string& title,
                       const std::string& x_title) {
  const ScatterLayout L = layout_pareto(marks, 520, 320);
  std::ostringstream o;
  o << open_svg(chart_id, title, L.frame.width, L.frame.height);
  o << x_axis(L.frame, L.x, L.x_ticks, x_title);
  o << y_axis(L.frame, L.y, L.y_ticks, "$ per 1M tokens (computed)");
  o << front_line(marks, L);
  o << "<g class=\"points\">";
  for (size_t i = 0; i < marks.size(); ++i)
    o << "<a href=\"#" << escape_xml(marks[i].id) << "\" data-front=\"" << (marks[i].front ? 1 : 0) << "\"><title>"
      << escape_xml(marks[i].tip) << "</title>"
      << pareto_marker(L.points[i], marks[i]) << "</a>";
  o << "</g>";
  std::vector<ScatterPoint> pts;
  for (const ParetoMark& m : marks) pts.push_back({m.id, m.label, m.rank, m.x, m.y, m.run});
  const LabelPlacement placed = place_labels(pts, L, kLabelFont);
  o << "<g class=\"labels\" font-size=\"" << num(kLabelFont) << "\" fill=\"" << kInk << "\">";
  for (size_t i = 0; i < marks.size(); ++i) {
    const Rect& b = placed.labels[i];
    if (b.width <= 0) continue;
    o << text(b.x + 1, b.y + kLabelFont, "#" + std::to_string(marks[i].rank), "start",
              marks[i].front ? " class=\"point-label\" font-weight=\"700\"" : " class=\"point-label\"");
  }
  o << "</g>"
    << text(L.frame.x1() - 4, L.frame.y0() + 12, "filled, joined: the Pareto front", "end",
            " class=\"front-label\" font-size=\"11\" font-weight=\"600\"")
    << "</svg>";
  return o.str();
}

PlotLayout layout_history(const std::vector<HistoryMark>& marks, double width, double height) {
  PlotLayout L;
  L.frame = Frame{width, height, 64, 20, 12, 44};
  const double n = static_cast<double>(marks.size());
  L.x = Scale{-0.5, std::max(0.5, n - 0.5), L.frame.x0(), L.frame.x1()};
  std::vector<double> ys;
  for (const HistoryMark& m : marks) ys.push_back(m.value);
  L.y_ticks = nice_ticks(0, max_of(ys));
  L.y = Scale{0, L.y_ticks.back(), L.frame.y1(), L.frame.y0()};
  for (size_t i = 0; i < marks.size(); ++i) L.points.push_back(Point{L.x(static_cast<double>(i)), L.y(marks[i].value)});
  return L;
}

std::string history_svg(const std::vector<HistoryMark>& marks, const std::string& chart_id, const std::string& title) {
  const PlotLayout L = layout_history(marks, 420, 220);
  std::ostringstream o;
  o << open_svg(chart_id, title, L.frame.width, L.frame.height);
  o << y_axis(L.frame, L.y, L.y_ticks, "tokens/s per GPU");
  const size_t every = std::max<size_t>(1, (marks.size() + 5) / 6);  // at most about 6 day labels
  o << "<g class=\"axis x\" font-size=\"10\" fill=\"" << kInk << "\">";
  for (size_t i = 0; i < marks.size(); i += every) o << text(L.points[i].x, L.frame.y1() + 14, marks[i].tick, "middle");
  o << "<line x1=\"" << num(L.frame.x0()) << "\" y1=\"" << num(L.frame.y1()) << "\" x2=\"" << num(L.frame.x1())
    << "\" y2=\"" << num(L.frame.y1()) << "\" stroke=\"" << kInk << "\"/>"
    << text((L.frame.x0() + L.frame.x1()) / 2, L.frame.height - 6, "date (oldest left)", "middle",
            " class=\"axis-title\" font-size=\"12\"")
    << "</g><polyline class=\"measured-line\" fill=\"none\" stroke=\"" << kDark << "\" stroke-width=\"2\" points=\"";
  bool first = true;
  for (size_t i = 0; i < marks.size(); ++i)
    if (!marks[i].predicted) {
      o << (first ? "" : " ") << num(L.points[i].x) << "," << num(L.points[i].y);
      first = false;
    }
  o << "\"/><g class=\"points\">";
  for (size_t i = 0; i < marks.size(); ++i) {
    const Point& p = L.points[i];
    o << "<g class=\"hpoint\" data-kind=\"" << (marks[i].predicted ? "predicted" : "measured") << "\"><title>"
      << escape_xml(marks[i].tip) << "</title>";
    if (marks[i].predicted)  // a hollow diamond
      o << "<path d=\"M" << num(p.x) << " " << num(p.y - 6) << " L" << num(p.x + 6) << " " << num(p.y) << " L"
        << num(p.x) << " " << num(p.y + 6) << " L" << num(p.x - 6) << " " << num(p.y) << " Z\" fill=\"#fff\" stroke=\""
        << kDark << "\" stroke-width=\"2\"/>";
    else
      o << "<circle cx=\"" << num(p.x) << "\" cy=\"" << num(p.y) << "\" r=\"4\" fill=\"" << kDark << "\"/>";
    if (marks[i].self)
      o << "<circle class=\"self\" cx=\"" << num(p.x) << "\" cy=\"" << num(p.y) << "\" r=\"8\" fill=\"none\" stroke=\""
        << kInk << "\" stroke-width=\"1.5\"/>";
    o << "</g>";
  }
  o << "</g></svg>";
  return o.str();
}

}  // namespace recipebench::svg
