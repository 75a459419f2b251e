// The page's SVG charts: tick choice and the pixel geometry of bars, scatter points and step series, checked
// against coordinates worked out by hand from the chart frames (svg_chart.cpp).
#include <catch2/catch.hpp>

#include "report/svg_chart.h"

using namespace recipebench::svg;

TEST_CASE("ticks are round steps of 1, 2 or 5 covering the range", "[report][svg]") {
  CHECK(nice_ticks(0, 1232.53) == std::vector<double>{0, 500, 1000, 1500});
  CHECK(nice_ticks(0, 3.68) == std::vector<double>{0, 1, 2, 3, 4});  // 3.68 / 5 = 0.74: step 1
  const auto t = nice_ticks(0, 2.4);                                 // 2.4 / 5 = 0.48: step 0.5 up to 2.5
  REQUIRE(t.size() == 6);
  CHECK(t.front() == 0);
  CHECK(t.back() == Approx(2.5));
  CHECK(t[1] == Approx(0.5));
  const auto u = nice_ticks(2.1, 2.9, 4);  // step 0.2 from 2.0 to 3.0
  REQUIRE(u.size() == 6);
  CHECK(u.front() == Approx(2.0));
  CHECK(u.back() == Approx(3.0));
  CHECK_THROWS_AS(nice_ticks(2, 1), std::invalid_argument);
  CHECK(tick_label(1500, 500) == "1,500");
  CHECK(tick_label(0.5, 0.5) == "0.5");
  CHECK(tick_label(2, 0.25) == "2.00");
}

TEST_CASE("bars are as long as tokens/s/GPU on an axis from 0, best first", "[report][svg]") {
  const std::vector<Bar> bars = {
      {"a", "TP2 PP8", 1, 1232.53, ""}, {"b", "TP2 PP8 8k", 2, 1130.66, ""}, {"c", "TP2 PP6", 3, 1075.5, ""}};
  const BarLayout L = layout_bars(bars, 760);
  // Plot x from 230 to 690 px for 0..1500 tokens/s/GPU; rows of 24 px from y = 8, bars 16 px high.
  CHECK(L.frame.height == 8 + 3 * 24 + 44);
  CHECK(L.ticks.back() == 1500);
  REQUIRE(L.rows.size() == 3);
  CHECK(L.rows[0].x == 230);
  CHECK(L.rows[0].width == Approx(1232.53 * 460 / 1500));  // 377.98 px
  CHECK(L.rows[0].y == 12);
  CHECK(L.rows[2].y == 60);
  CHECK(L.rows[2].width == Approx(1075.5 * 460 / 1500));
  const std::string svg = bar_chart_svg(bars, "bars-g", "t");
  CHECK(svg.find("<rect x=\"230\" y=\"12\" width=\"378\" height=\"16\"") != std::string::npos);
  CHECK(svg.find("tokens/s per GPU (measured)") != std::string::npos);
  CHECK(svg.find(">#1  TP2 PP8<") != std::string::npos);
}

TEST_CASE("more bars than fit show the top ones and say how many there are", "[report][svg]") {
  std::vector<Bar> bars;
  for (int i = 0; i < 40; ++i) bars.push_back({"e" + std::to_string(i), "L", i + 1, 1000.0 - i, ""});
  const BarLayout L = layout_bars(bars, 760, 25);
  CHECK(L.shown == 25);
  CHECK(L.total == 40);
  CHECK(L.rows.size() == 25);
  CHECK(bar_chart_svg(bars, "b", "t").find("top 25 of 40") != std::string::npos);
}

TEST_CASE("the scatter puts $ against tokens/s/GPU and marks the cheap-and-fast corner", "[report][svg]") {
  const std::vector<ScatterPoint> pts = {
      {"a", "A", 1, 1232.53, 3.21, false}, {"b", "B", 2, 1130.7, 3.50, false}, {"c", "C", 3, 1075.5, 3.68, true}};
  const ScatterLayout L = layout_scatter(pts, 520, 320);
  // Plot x 64..500 px for 0..1500; y 276..14 px for $0..$4.
  CHECK(L.x_ticks.back() == 1500);
  CHECK(L.y_ticks.back() == Approx(4.0));
  CHECK(L.points[0].x == Approx(64 + 1232.53 * 436 / 1500));  // 422.26
  CHECK(L.points[0].y == Approx(276 - 3.21 * 262 / 4));       // 65.75
  CHECK(L.median_x == Approx(1130.7));
  CHECK(L.median_y == Approx(3.50));
  // The corner: right of the median speed, below the median price, out to the plot's right and bottom edges.
  CHECK(L.corner.x == Approx(64 + 1130.7 * 436 / 1500));
  CHECK(L.corner.y == Approx(276 - 3.5 * 262 / 4));
  CHECK(L.corner.x + L.corner.width == Approx(500));
  CHECK(L.corner.y + L.corner.height == Approx(276));
  const std::string svg = scatter_svg(pts, "cost-g", "t");
  CHECK(svg.find("<circle cx=\"422.3\" cy=\"65.7\" r=\"5\"") != std::string::npos);
  CHECK(svg.find("fill=\"url(#cost-g-hatch)\"") != std::string::npos);  // hatched corner, grey-scale safe
  CHECK(svg.find("$ per 1M tokens (computed)") != std::string::npos);
  CHECK(svg.find("<rect x=\"") != std::string::npos);  // the run record's square marker
  CHECK(median({3, 1, 2, 10}) == Approx(2.5));
}

TEST_CASE("step times are drawn per step with the timed window shaded", "[report][svg]") {
  std::vector<double> secs(20, 1.0);
  secs[0] = 2.5;
  const StepLayout L = layout_steps(secs, 5, 19, true, 420, 240);
  // x from 64 to 406 px for steps -0.5..19.5 (17.1 px a step); y from 196 (0 s) up to 12 (2.5 s).
  CHECK(L.points[0].x == Approx(64 + 0.5 * 17.1));
  CHECK(L.points[19].x == Approx(406 - 0.5 * 17.1));
  CHECK(L.points[0].y == Approx(12));
  CHECK(L.points[1].y == Approx(196 - 184 / 2.5));
  CHECK(L.window.x == Approx(64 + 5 * 17.1));
  CHECK(L.window.width == Approx(15 * 17.1));
  CHECK(L.window.height == Approx(184));
  CHECK(L.x_ticks.front() == 0);
  CHECK(L.x_ticks.back() <= 19);
  const std::string svg = steps_svg(secs, 5, 19, StepStyle{"step time (s)", true, false, false}, "s", "t");
  CHECK(svg.find("<rect class=\"window\" x=\"149.5\"") != std::string::npos);
  CHECK(svg.find("timed window 5..19") != std::string::npos);
  CHECK(svg.find("step time (s)") != std::string::npos);
  // The loss style: dashed line and square markers, y from the data's lower tick.
  const std::vector<double> loss = {12.8, 12.7, 12.5, 12.1};
  const StepLayout M = layout_steps(loss, 0, -1, false, 420, 240);
  CHECK(M.y_ticks.front() == Approx(12.0));
  CHECK(M.window.width == 0);
  const std::string lsvg = steps_svg(loss, 0, -1, StepStyle{"loss", false, true, true}, "l", "t");
  CHECK(lsvg.find("stroke-dasharray=\"6 3\"") != std::string::npos);
  CHECK(lsvg.find("class=\"window\"") == std::string::npos);
}

TEST_CASE("chart text is escaped", "[report][svg]") {
  const std::string svg = bar_chart_svg({{"x\"y", "<script>alert(1)</script>", 1, 10, ""}}, "b", "<t>");
  CHECK(svg.find("<script") == std::string::npos);
  CHECK(svg.find("&lt;script&gt;") != std::string::npos);
  CHECK(svg.find("data-id=\"x&quot;y\"") != std::string::npos);
}

namespace {

/// The boxes of a scatter's drawn rank labels, read back from its SVG text (x, baseline y and "#k"), as
/// place_labels sized them: text_width at 11 px plus 2, 1.25 x 11 px high, the text 1 px in and 11 px down.
std::vector<Rect> label_boxes(const std::string& svg) {
  std::vector<Rect> out;
  for (size_t at = svg.find("<text class=\"point-label\""); at != std::string::npos;
       at = svg.find("<text class=\"point-label\"", at + 1)) {
    const size_t x = svg.find(" x=\"", at) + 4, y = svg.find(" y=\"", at) + 4;
    const size_t t = svg.find('>', at) + 1;
    const std::string text = svg.substr(t, svg.find('<', t) - t);
    out.push_back(Rect{std::stod(svg.substr(x)) - 1, std::stod(svg.substr(y)) - 11, text_width(text, 11) + 2, 13.75});
  }
  return out;
}

}  // namespace

TEST_CASE("scatter labels are placed where they overlap no other label and no marker", "[report][svg]") {
  // 12 points in two tight clusters and a run of identical points: the naive "right and above" spot overlaps.
  std::vector<ScatterPoint> pts;
  for (int i = 0; i < 6; ++i) pts.push_back({"a" + std::to_string(i), "L", i + 1, 1000 + i * 3.0, 3.0 + i * 0.01, i % 2 == 1});
  for (int i = 0; i < 6; ++i) pts.push_back({"b" + std::to_string(i), "L", i + 7, 600.0, 1.5, false});
  const ScatterLayout L = layout_scatter(pts, 520, 320);
  const LabelPlacement P = place_labels(pts, L, 11);
  REQUIRE(P.labels.size() == pts.size());
  const Rect area{L.frame.x0(), L.frame.y0(), L.frame.x1() - L.frame.x0(), L.frame.y1() - L.frame.y0()};
  size_t drawn = 0;
  for (size_t i = 0; i < pts.size(); ++i) {
    if (P.labels[i].width <= 0) continue;
    ++drawn;
    const Rect& a = P.labels[i];
    CHECK(a.x >= area.x);
    CHECK(a.x + a.width <= area.x + area.width);
    for (size_t j = i + 1; j < pts.size(); ++j) CHECK_FALSE(intersects(a, P.labels[j]));
    for (const Point& p : L.points) CHECK_FALSE(intersects(a, Rect{p.x - 6, p.y - 6, 12, 12}));
  }
  CHECK(drawn == pts.size());  // room for all twelve
  // The same input gives the same places (deterministic), and the first label sits right of its point.
  const LabelPlacement again = place_labels(pts, L, 11);
  for (size_t i = 0; i < pts.size(); ++i) CHECK(again.labels[i].x == P.labels[i].x);
  // The SVG draws the labels where the placement put them: read back, no two boxes intersect.
  const std::vector<Rect> boxes = label_boxes(scatter_svg(pts, "c", "t"));
  REQUIRE(boxes.size() == pts.size());
  for (size_t i = 0; i < boxes.size(); ++i)
    for (size_t j = i + 1; j < boxes.size(); ++j) CHECK_FALSE(intersects(boxes[i], boxes[j]));
  // Touching edges do not intersect; sharing area does.
  CHECK_FALSE(intersects(Rect{0, 0, 10, 10}, Rect{10, 0, 10, 10}));
  CHECK(intersects(Rect{0, 0, 10, 10}, Rect{9.5, 9.5, 10, 10}));
  CHECK(text_width("#12", 11) == Approx(3 * 0.62 * 11));
}

TEST_CASE("a scatter of many points labels the best ranks only, never overlapping", "[report][svg]") {
  std::vector<ScatterPoint> pts;
  for (int i = 0; i < 500; ++i) pts.push_back({"p" + std::to_string(i), "L", i + 1, 1000.0 - i, 3.0 + (i % 7) * 0.1, false});
  const ScatterLayout L = layout_scatter(pts, 520, 320);
  const LabelPlacement P = place_labels(pts, L, 11, 40);
  std::vector<Rect> drawn;
  for (size_t i = 0; i < pts.size(); ++i)
    if (P.labels[i].width > 0) {
      CHECK(pts[i].rank <= 40);
      drawn.push_back(P.labels[i]);
    }
  CHECK(drawn.size() <= 40);
  for (size_t i = 0; i < drawn.size(); ++i)
    for (size_t j = i + 1; j < drawn.size(); ++j) CHECK_FALSE(intersects(drawn[i], drawn[j]));
}

TEST_CASE("a bar with a detail line gets a second, smaller line and taller rows", "[report][svg]") {
  const std::vector<Bar> bars = {{"a", "TP2 PP8 VPP2 EP8 DP4", 1, 1232.53, "max tokens per GPU 16384"},
                                 {"b", "TP2 PP8 VPP2 EP8 DP4", 2, 1130.66, "max tokens per GPU 8192"},
                                 {"c", "TP2 PP6 EP8 DP4", 3, 1075.5, ""}};
  const BarLayout L = layout_bars(bars, 760);
  CHECK(L.frame.height == 8 + 3 * 36 + 44);
  CHECK(L.rows[1].y == 8 + 36 + 10);
  const std::string svg = bar_chart_svg(bars, "bars-g", "t");
  CHECK(svg.find(">max tokens per GPU 16384</text>") != std::string::npos);
  CHECK(svg.find(">max tokens per GPU 8192</text>") != std::string::npos);
  CHECK(svg.find("<title>#1 TP2 PP8 VPP2 EP8 DP4 (max tokens per GPU 16384): 1,232.5 tokens/s/GPU</title>") !=
        std::string::npos);
  // A label too long for the 218 px column is cut with an ellipsis, its full text in the tooltip.
  const std::string longer = bar_chart_svg({{"x", std::string(60, 'W'), 1, 10, ""}}, "b2", "t");
  CHECK(longer.find("…</text>") != std::string::npos);
}
