// Charts of the leaderboard page as inline SVG: geometry computed here (pure functions, unit-tested), markup
// written from it. No script, no external library, nothing fetched. Made to read in grey-scale print: series are
// told apart by hatching, marker shape and dash, not by colour alone (docs/report.md).
#pragma once

#include <string>
#include <vector>

namespace recipebench::svg {

/// Linear map from data [d0, d1] to pixels [r0, r1] (either direction; r1 < r0 for an upward y axis).
struct Scale {
  double d0 = 0, d1 = 1, r0 = 0, r1 = 1;
  /// Halves of the data: v - d0 and d1 - d0 overflow for a domain that spans most of the doubles.
  double operator()(double v) const {
    return d1 == d0 ? (r0 + r1) / 2 : r0 + (v / 2 - d0 / 2) / (d1 / 2 - d0 / 2) * (r1 - r0);
  }
};

/// Round tick values covering [lo, hi]: steps of 1, 2 or 5 x 10^k, about `target` of them; the first tick
/// <= lo and the last >= hi, at least two of them. Total over finite bounds: lo == hi gives a range of +-0.5 around
/// it, or +-1e-6 of its value when that is wider; a range narrower than 1e-9 of its bounds is widened to that; a
/// tick past the largest double is the bound itself; `target` is taken between 1 and 1000. Throws
/// std::invalid_argument if lo > hi or a bound is not finite.
std::vector<double> nice_ticks(double lo, double hi, int target = 5);

/// Tick label text: as many decimals as the tick step needs (step 0.25 -> "0.25", step 500 -> "1,500"); a value
/// of 1e15 or more in magnitude in exponent form (shortest: 1e16 -> "1e+16").
std::string tick_label(double value, double step);

/// The plot area inside an SVG of `width` x `height` pixels.
struct Frame {
  double width = 0, height = 0, left = 0, right = 0, top = 0, bottom = 0;
  double x0() const { return left; }
  double x1() const { return width - right; }
  double y0() const { return top; }
  double y1() const { return height - bottom; }
};

struct Rect {
  double x = 0, y = 0, width = 0, height = 0;
};
struct Point {
  double x = 0, y = 0;
};

// ---- tokens/s/GPU bars, best first ----

struct Bar {
  std::string id, label;  ///< label: e.g. the layout ("TP2 PP8 VPP2 EP8 DP4")
  int rank = 0;
  double value = 0;    ///< tokens/s/GPU
  std::string detail;  ///< a second, smaller line under the label: what tells the bar apart (empty: none)
};

/// Horizontal bars, one row per entry (at most `max_bars`, best first), on an x axis from 0 to past the
/// largest value. rows[i] is bar i's rectangle; ticks are the x axis's values. Rows are 24 px apart, 36 px when
/// any shown bar has a detail line.
struct BarLayout {
  Frame frame;
  Scale x;
  std::vector<double> ticks;
  std::vector<Rect> rows;
  size_t shown = 0, total = 0;
};
BarLayout layout_bars(const std::vector<Bar>& bars, double width, size_t max_bars = 25);
/// The SVG of the bar chart; `chart_id` keeps pattern ids unique in the page.
std::string bar_chart_svg(const std::vector<Bar>& bars, const std::string& chart_id, const std::string& title);

// ---- $ / 1M tokens against tokens/s/GPU ----

struct ScatterPoint {
  std::string id, label;
  int rank = 0;
  double x = 0, y = 0;        ///< tokens/s/GPU, $ per 1M tokens
  bool measured_run = false;  ///< run records are drawn as squares, recipes as circles
};

/// A chart's frame, axes (data -> pixel scales and tick values) and its points in pixels.
struct PlotLayout {
  Frame frame;
  Scale x, y;
  std::vector<double> x_ticks, y_ticks;
  std::vector<Point> points;
};

/// Points on axes from 0; `corner` is the cheap-and-fast region: faster than the median tokens/s/GPU and cheaper
/// than the median $ / 1M tokens (to the plot's right and bottom edges).
struct ScatterLayout : PlotLayout {
  Rect corner;
  double median_x = 0, median_y = 0;
};
ScatterLayout layout_scatter(const std::vector<ScatterPoint>& pts, double width, double height);

/// Text width in pixels of `s` at `font_px`, as drawn by a sans-serif UI font: an upper bound per character
/// (0.62 em per character, 0.35 em for a space), so a box of this width holds the text.
double text_width(const std::string& s, double font_px);

/// Where the rank labels of a scatter's points go: label i is `labels[i]` (its box; width 0 when not drawn)
/// beside point i. Deterministic: points in rank order (then by index), each label at the first free place of a
/// fixed list of candidates around its point at growing distances (right, left, above, below, the diagonals),
/// inside the frame's plot area, intersecting no earlier label's box and no point's marker (a 12 x 12 px square).
/// A label with no free place within `max_distance` px is not drawn (its point keeps its tooltip); at most
/// `max_labels` labels (the best ranks) are drawn. So no two drawn label boxes intersect.
struct LabelPlacement {
  std::vector<Rect> labels;
  std::vector<bool> leader;  ///< label i is far from its point: a line joins them
};
LabelPlacement place_labels(const std::vector<ScatterPoint>& pts, const ScatterLayout& layout, double font_px,
                            size_t max_labels = 40, double max_distance = 90);

/// True when the two boxes share interior area (touching edges do not intersect).
bool intersects(const Rect& a, const Rect& b);
std::string scatter_svg(const std::vector<ScatterPoint>& pts, const std::string& chart_id, const std::string& title);

// ---- $ / 1M tokens against hours to train a token budget: the Pareto view ----

struct ParetoMark {
  std::string id, label;  ///< the entry's id (the point links to its card, #id) and layout label
  int rank = 0;
  double x = 0, y = 0;    ///< hours to train the budget, $ per 1M tokens
  bool run = false;       ///< a run record: a square; a recipe: a circle
  bool front = false;     ///< on the Pareto front: filled and joined by the front's line; else hollow
  std::string tip;        ///< the point's tooltip
};

/// The Pareto view's points on axes from 0 (layout_scatter's axes, without its median corner): x hours, y $.
ScatterLayout layout_pareto(const std::vector<ParetoMark>& marks, double width, double height);
/// The SVG of the Pareto view: each point a link to its card, the front's points filled and joined (a dashed step
/// line, fastest to cheapest), rank labels placed as the scatter's (place_labels). `x_title` names the budget.
std::string pareto_svg(const std::vector<ParetoMark>& marks, const std::string& chart_id, const std::string& title,
                       const std::string& x_title);

// ---- an entry's history: the rank key over its runs and predictions ----

struct HistoryMark {
  double value = 0;       ///< tokens/s/GPU
  bool predicted = false;  ///< a prediction: a hollow diamond, not joined; measured: filled circles joined
  bool self = false;       ///< the card's own entry: ringed
  std::string tick;        ///< the x label (the day)
  std::string tip;         ///< the tooltip: date, commit, figure, measured or predicted
};

/// Points evenly spaced in date order (x: index) on a y axis of tokens/s/GPU from 0.
PlotLayout layout_history(const std::vector<HistoryMark>& marks, double width, double height);
std::string history_svg(const std::vector<HistoryMark>& marks, const std::string& chart_id, const std::string& title);

/// Median of `v` (mean of the middle two for an even count); 0 for an empty vector.
double median(std::vector<double> v);

// ---- per-step series of a run record ----

/// A series over steps 0..N-1 on an x axis of step indices and a y axis from 0 (or from the data's lower tick
/// when `from_zero` is false). `window` is the shaded timed window [first - 0.5, last + 0.5] in step units;
/// zero width when the series has none.
struct StepLayout : PlotLayout {
  Rect window;
};
StepLayout layout_steps(const std::vector<double>& values, int window_first, int window_last, bool from_zero,
                        double width, double height);

/// Style of a step chart: y axis title (with its unit), whether y starts at 0, and the line's dash and marker.
struct StepStyle {
  std::string y_title;
  bool from_zero = true;
  bool dashed = false;
  bool square_markers = false;
};
std::string steps_svg(const std::vector<double>& values, int window_first, int window_last, const StepStyle& style,
                      const std::string& chart_id, const std::string& title);

/// `s` with & < > " ' escaped, for SVG/HTML text and attribute values.
std::string escape_xml(const std::string& s);

}  // namespace recipebench::svg
