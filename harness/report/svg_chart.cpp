#include "report/svg_chart.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>
#include <stdexcept>

#include "util/format.h"

namespace recipebench::svg {

namespace {

constexpr const char* kInk = "#1d2330";   // axes and text: black in grey-scale
constexpr const char* kDark = "#1f3b73";  // the best bar, recipe points, lines: dark grey in grey-scale
constexpr const char* kMid = "#7d97c2";   // the other bars: mid grey
constexpr const char* kGrid = "#d5dae3";

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

std::vector<double> nice_ticks(double lo, double hi, int target) {
  if (!(lo <= hi)) throw std::invalid_argument("nice_ticks: lo > hi");
  if (lo == hi) lo -= 0.5, hi += 0.5;
  const double raw = (hi - lo) / std::max(1, target);
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = mag;
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * mag >= raw) {
      step = m * mag;
      break;
    }
  std::vector<double> ticks;
  const double first = std::floor(lo / step + 1e-9) * step;
  for (double t = first; t < hi + step * (1 - 1e-9); t += step) ticks.push_back(std::abs(t) < step * 1e-9 ? 0 : t);
  if (ticks.back() < hi) ticks.push_back(ticks.back() + step);
  return ticks;
}

std::string tick_label(double value, double step) {
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
  constexpr double kRow = 24, kBar = 16;
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
  for (size_t i = 0; i < L.shown; ++i) {
    const Rect& r = L.rows[i];
    const Bar& b = bars[i];
    std::string label = "#" + std::to_string(b.rank) + "  " + b.label;
    if (label.size() > 34) {  // cut on a UTF-8 character boundary
      size_t cut = 33;
      while (cut > 0 && (static_cast<unsigned char>(label[cut]) & 0xC0) == 0x80) --cut;
      label = label.substr(0, cut) + "…";
    }
    o << "<g class=\"bar\" data-id=\"" << escape_xml(b.id) << "\"><title>"
      << escape_xml("#" + std::to_string(b.rank) + " " + b.label + ": " + fixed(b.value, 1) + " tokens/s/GPU")
      << "</title>" << text(L.frame.x0() - 8, r.y + 12, label, "end") << "<rect x=\"" << num(r.x) << "\" y=\""
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
  o << "<g class=\"points\" font-size=\"11\" fill=\"" << kInk << "\">";
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
    o << text(p.x + 8, p.y - 6, "#" + std::to_string(s.rank), "start") << "</g>";
  }
  o << "</g></svg>";
  return o.str();
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

}  // namespace recipebench::svg
