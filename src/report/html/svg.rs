//! Inline SVG charts: scales, line and bar plots, per-CPU strips and heatmaps. Every drawn
//! datum carries the class `pt`, and each `<svg>` states in `data-points` how many it holds, so
//! a reader (or a test) can check that nothing was dropped. No chart needs a script, a font or
//! anything outside the page.

use crate::text::Page;
use maud::{Markup, html};

/// Width of every chart, px.
const WIDTH: f64 = 760.0;
/// Height of a plot, px.
const HEIGHT: f64 = 300.0;
/// Room for the y axis labels, px.
const LEFT: f64 = 64.0;
/// Room above the plot area, px.
const TOP: f64 = 12.0;
/// Room for the colour legend right of heat strips and heatmaps, px.
const RIGHT: f64 = 150.0;
/// Room right of a plot (its legend is below it), px.
const PLOT_RIGHT: f64 = 24.0;
/// Height of one legend line below a plot, px.
const LEGEND_LINE: f64 = 18.0;
/// Largest side of a heat-strip cell, px.
const MAX_CELL: f64 = 24.0;
/// Narrowest bar of a histogram, px.
const MIN_BAR: f64 = 2.0;
/// Room for the x axis labels, px.
const BOTTOM: f64 = 44.0;
/// Matrices with more cells than this are drawn as one path per colour level.
const CELLS_AS_RECTS: usize = 64 * 64;

/// Colours of overlaid series, in order (colour-blind safe).
const SERIES: [&str; 6] = [
    "#0072b2", "#d55e00", "#009e73", "#cc79a7", "#e69f00", "#56b4e9",
];
/// Colour levels of heat strips and heatmaps, low to high.
const HEAT: [&str; 9] = [
    "#ffffd9", "#edf8b1", "#c7e9b4", "#7fcdbb", "#41b6c4", "#1d91c0", "#225ea8", "#253494",
    "#081d58",
];

/// How the values of one axis are laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Axis {
    /// Linear, from zero (or from the lowest value when it is negative).
    Linear,
    /// Linear, from zero unless zero would flatten the values' spread (their range is under a
    /// quarter of the largest): then over their range only, and the axis label says so.
    Spread,
    /// Logarithmic over whole decades (positive values only). When the smallest value sits on
    /// a power of ten (one event), the axis starts a decade lower, unlabelled, so that its bar
    /// is a decade tall instead of none.
    Log,
    /// One slot per whole number (CPUs): a tick on each number (or every few), bars inside
    /// their slot, side by side when series overlap.
    Discrete,
}

/// How values map onto one axis.
#[derive(Debug, Clone, Copy)]
struct Scale {
    lo: f64,
    hi: f64,
    axis: Axis,
    /// The lowest value labelled (above `lo` when a log axis was extended below its values).
    first_tick: f64,
    from: f64,
    to: f64,
}

impl Scale {
    /// A scale over the values (at least one positive value on a log scale), from pixel
    /// `from` to pixel `to`.
    fn over(values: impl Iterator<Item = f64>, axis: Axis, from: f64, to: f64) -> Scale {
        let log = axis == Axis::Log;
        let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
        for v in values.filter(|v| v.is_finite() && (!log || *v > 0.0)) {
            lo = lo.min(v);
            hi = hi.max(v);
        }
        if !lo.is_finite() {
            (lo, hi) = (1.0, 10.0);
        }
        let mut first_tick = f64::NEG_INFINITY;
        match axis {
            Axis::Log => {
                let floor = 10f64.powf(lo.log10().floor());
                hi = 10f64.powf(hi.log10().ceil()).max(floor * 10.0);
                first_tick = floor;
                lo = if lo <= floor * (1.0 + 1e-9) {
                    floor / 10.0
                } else {
                    floor
                };
            }
            Axis::Discrete => {
                lo -= 0.5;
                hi += 0.5;
            }
            Axis::Spread if lo > 0.0 && hi - lo < hi / 4.0 => {
                let pad = ((hi - lo) * 0.1).max(hi * 0.005).max(f64::MIN_POSITIVE);
                let step = nice_step(hi - lo + 2.0 * pad);
                lo = ((lo - pad) / step).floor() * step;
                hi = ((hi + pad) / step).ceil() * step;
            }
            Axis::Linear | Axis::Spread => {
                lo = lo.min(0.0);
                if hi <= lo {
                    hi = lo + 1.0;
                }
                let step = nice_step(hi - lo);
                hi = (hi / step).ceil() * step;
            }
        }
        Scale {
            lo,
            hi,
            axis,
            first_tick,
            from,
            to,
        }
    }

    /// Whether the axis leaves out zero although its values are positive (a spread axis).
    fn cut(&self) -> bool {
        self.axis == Axis::Spread && self.lo > 0.0
    }

    /// The pixel of `v` (values outside the range are clamped to it).
    fn at(&self, v: f64) -> f64 {
        let t = if self.axis == Axis::Log {
            (v.max(self.lo).log10() - self.lo.log10()) / (self.hi.log10() - self.lo.log10())
        } else {
            (v - self.lo) / (self.hi - self.lo)
        };
        self.from + t.clamp(0.0, 1.0) * (self.to - self.from)
    }

    /// Pixels per unit of a linear or discrete scale.
    fn unit(&self) -> f64 {
        (self.to - self.from).abs() / (self.hi - self.lo)
    }

    /// Values to label: the powers of ten on a log scale, each slot (or every few) on a
    /// discrete one, about five round numbers otherwise.
    fn ticks(&self) -> Vec<f64> {
        match self.axis {
            Axis::Log => {
                let (a, b) = (
                    self.first_tick.log10().round() as i32,
                    self.hi.log10().round() as i32,
                );
                (a..=b).map(|e| 10f64.powi(e)).collect()
            }
            Axis::Discrete => {
                let (first, last) = ((self.lo + 0.5) as i64, (self.hi - 0.5) as i64);
                let every = [1, 2, 4, 8, 16, 32, 64, 128]
                    .into_iter()
                    .find(|k| (last - first) / k < 32)
                    .unwrap_or(256);
                (first..=last)
                    .filter(|v| v % every == 0)
                    .map(|v| v as f64)
                    .collect()
            }
            Axis::Linear | Axis::Spread => {
                let step = nice_step(self.hi - self.lo);
                let n = ((self.hi - self.lo) / step).round() as usize;
                (0..=n).map(|i| self.lo + step * i as f64).collect()
            }
        }
    }
}

/// A round step (1, 2 or 5 × 10^k) that cuts `span` into about five.
fn nice_step(span: f64) -> f64 {
    let raw = span / 5.0;
    let magnitude = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .find(|m| m * magnitude >= raw)
        .unwrap_or(10.0);
    step * magnitude
}

/// A number as an axis or a table shows it: whole numbers without decimals, others with at
/// most three significant digits.
pub(crate) fn num(v: f64) -> String {
    if !v.is_finite() {
        return "–".to_string();
    }
    if v.fract() == 0.0 && v.abs() < 1e15 {
        return format!("{v:.0}");
    }
    let digits = (2 - v.abs().log10().floor() as i32).clamp(0, 6) as usize;
    let text = format!("{v:.digits$}");
    if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        text
    }
}

/// One named set of (x, y) points.
#[derive(Debug, Clone)]
pub(crate) struct Series {
    /// Shown in the legend: which document or CPU the points come from.
    pub label: String,
    /// The points, in x order.
    pub points: Vec<(f64, f64)>,
}

/// How the points of a [`Plot`] are drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mark {
    /// A bar from the x axis to each point (histograms).
    Bars,
    /// Points joined by a line (curves, CCDFs).
    Lines,
}

/// An x/y chart of one or more series.
#[derive(Debug, Clone)]
pub(crate) struct Plot<'a> {
    /// What the chart shows (its accessible name).
    pub title: &'a str,
    /// The x axis label, with its unit.
    pub x_label: &'a str,
    /// The y axis label, with its unit.
    pub y_label: &'a str,
    /// How the x axis is laid out.
    pub x: Axis,
    /// How the y axis is laid out.
    pub y: Axis,
    /// Bars or lines.
    pub mark: Mark,
    /// The data, overlaid.
    pub series: &'a [Series],
}

/// Draws `plot`.
pub(crate) fn plot(plot: &Plot) -> Markup {
    let all = || plot.series.iter().flat_map(|s| s.points.iter());
    let x = Scale::over(all().map(|p| p.0), plot.x, LEFT, WIDTH - PLOT_RIGHT);
    let y = Scale::over(all().map(|p| p.1), plot.y, TOP + HEIGHT, TOP);
    let count = all().count();
    let series = plot.series.len().max(1) as f64;
    // Bars of a discrete axis share their slot; others get an equal share of the width, at
    // least MIN_BAR so that a single worst case stays visible.
    let bar = if plot.x == Axis::Discrete {
        x.unit() * 0.8 / series
    } else {
        ((WIDTH - PLOT_RIGHT - LEFT) / (count.max(1) as f64)).clamp(MIN_BAR, 8.0)
    };
    let offset = |i: usize| {
        if plot.x == Axis::Discrete {
            bar * (i as f64 - (series - 1.0) / 2.0)
        } else {
            0.0
        }
    };
    let y_label = if y.cut() {
        format!("{} (axis from {})", plot.y_label, num(y.lo))
    } else {
        plot.y_label.to_string()
    };
    let height = HEIGHT + TOP + BOTTOM + LEGEND_LINE * plot.series.len() as f64;
    html! {
        svg.chart viewBox=(format!("0 0 {WIDTH} {height}")) role="img"
            aria-label=(plot.title) data-points=(count) {
            (axes(&x, &y, plot.x_label, &y_label))
            @for (i, s) in plot.series.iter().enumerate() {
                @let colour = SERIES[i % SERIES.len()];
                g fill=(colour) stroke=(colour) {
                    @if plot.mark == Mark::Lines && s.points.len() > 1 {
                        polyline fill="none" stroke-width="1.5" points=(polyline(&x, &y, &s.points)) {}
                    }
                    @for &(px, py) in &s.points {
                        @if plot.mark == Mark::Bars {
                            rect.pt x=(r1(x.at(px) + offset(i) - bar / 2.0)) y=(r1(y.at(py))) width=(r1(bar))
                                height=(r1((y.at(y.lo) - y.at(py)).max(0.5))) fill-opacity="0.6" stroke="none" {
                                title { (num(px)) ": " (num(py)) }
                            }
                        } @else {
                            circle.pt cx=(r1(x.at(px))) cy=(r1(y.at(py))) r="2" {}
                        }
                    }
                    (legend_entry(i, &s.label, colour))
                }
            }
        }
    }
}

/// A value with one decimal, as SVG coordinates are written.
fn r1(v: f64) -> String {
    format!("{v:.1}")
}

fn polyline(x: &Scale, y: &Scale, points: &[(f64, f64)]) -> String {
    let coords: Vec<String> = points
        .iter()
        .map(|&(px, py)| format!("{:.1},{:.1}", x.at(px), y.at(py)))
        .collect();
    coords.join(" ")
}

/// The legend line of series `i`, below the plot.
fn legend_entry(i: usize, label: &str, colour: &str) -> Markup {
    let top = TOP + HEIGHT + BOTTOM + 4.0 + LEGEND_LINE * i as f64;
    html! {
        rect x=(LEFT) y=(top) width="10" height="10" fill=(colour) stroke="none" {}
        text.legend x=(LEFT + 16.0) y=(top + 9.0) stroke="none" fill="#222" { (label) }
    }
}

fn axes(x: &Scale, y: &Scale, x_label: &str, y_label: &str) -> Markup {
    let baseline = TOP + HEIGHT;
    html! {
        g.axes stroke="#888" fill="#222" {
            line x1=(LEFT) y1=(baseline) x2=(x.to) y2=(baseline) {}
            line x1=(LEFT) y1=(TOP) x2=(LEFT) y2=(baseline) {}
            @for t in x.ticks() {
                line x1=(r1(x.at(t))) y1=(baseline) x2=(r1(x.at(t))) y2=(baseline + 4.0) {}
                text x=(r1(x.at(t))) y=(baseline + 16.0) text-anchor="middle" stroke="none" { (num(t)) }
            }
            @for t in y.ticks() {
                line.grid x1=(LEFT) y1=(r1(y.at(t))) x2=(x.to) y2=(r1(y.at(t))) {}
                text x=(LEFT - 6.0) y=(r1(y.at(t) + 4.0)) text-anchor="end" stroke="none" { (num(t)) }
            }
            text x=((LEFT + x.to) / 2.0) y=(baseline + 36.0) text-anchor="middle" stroke="none" { (x_label) }
            text x="14" y=(TOP + HEIGHT / 2.0) text-anchor="middle" stroke="none"
                transform=(format!("rotate(-90 14 {})", TOP + HEIGHT / 2.0)) { (y_label) }
        }
    }
}

/// The lowest and highest of `values`: the colour range of heat strips and heatmaps. Charts
/// meant to be compared (before and after) are given one range over all their values.
pub(crate) fn range(values: impl IntoIterator<Item = f64>) -> (f64, f64) {
    values
        .into_iter()
        .filter(|v| v.is_finite())
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
            (lo.min(v), hi.max(v))
        })
}

/// The heat colour of `v` within `lo..=hi`; the middle colour when there is one value only
/// (the palest would read "low").
fn heat(v: f64, lo: f64, hi: f64) -> usize {
    if hi <= lo {
        return HEAT.len() / 2;
    }
    (((v - lo) / (hi - lo)).clamp(0.0, 1.0) * (HEAT.len() - 1) as f64).round() as usize
}

/// The colour scale from `lo` to `hi`, or the one colour and value when they are equal.
fn heat_legend(lo: f64, hi: f64, unit: &str, y: f64) -> Markup {
    let x0 = WIDTH - RIGHT + 12.0;
    html! {
        g.legend {
            @if hi <= lo {
                rect x=(x0) y=(y) width="12" height="10" fill=(HEAT[heat(lo, lo, hi)]) {}
                text x=(x0) y=(y + 24.0) fill="#222" { "all " (num(lo)) " " (unit) }
            } @else {
                @for (i, colour) in HEAT.iter().enumerate() {
                    rect x=(x0 + 12.0 * i as f64) y=(y) width="12" height="10" fill=(*colour) {}
                }
                text x=(x0) y=(y + 24.0) fill="#222" { (num(lo)) " " (unit) }
                text x=(x0 + 12.0 * HEAT.len() as f64) y=(y + 24.0) text-anchor="end" fill="#222" { (num(hi)) " " (unit) }
            }
        }
    }
}

/// One cell per CPU, coloured by its value within `(lo, hi)` (a heat strip; see [`range`]),
/// with the CPU numbers below.
pub(crate) fn strip(title: &str, cells: &[(u32, f64)], unit: &str, (lo, hi): (f64, f64)) -> Markup {
    let per_row = 64usize;
    let cell = ((WIDTH - RIGHT - LEFT) / per_row.min(cells.len().max(1)) as f64).min(MAX_CELL);
    let rows = cells.len().div_ceil(per_row).max(1);
    let height = rows as f64 * (cell + 14.0) + TOP;
    let label_every = if cells.len() > 32 { 8 } else { 1 };
    html! {
        svg.chart viewBox=(format!("0 0 {WIDTH} {}", height.max(50.0))) role="img" aria-label=(title)
            data-points=(cells.len()) {
            @for (i, &(cpu, v)) in cells.iter().enumerate() {
                @let (cx, cy) = (LEFT + (i % per_row) as f64 * cell, TOP + (i / per_row) as f64 * (cell + 14.0));
                rect.pt x=(r1(cx)) y=(r1(cy)) width=(r1(cell)) height=(r1(cell))
                    fill=(HEAT[heat(v, lo, hi)]) stroke="#fff" stroke-width="0.5" {}
                @if i % label_every == 0 {
                    text x=(r1(cx + cell / 2.0)) y=(r1(cy + cell + 11.0)) text-anchor="middle" fill="#222" { (cpu) }
                }
            }
            text x=(LEFT - 6.0) y=(r1(TOP + cell / 2.0 + 4.0)) text-anchor="end" fill="#222" { "CPU" }
            (heat_legend(lo, hi, unit, TOP))
        }
    }
}

/// The cells of a [`heatmap`]: row and column labels and the values (`None`: empty).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Cells<'a> {
    /// Row labels, top to bottom.
    pub rows: &'a [String],
    /// Column labels, left to right.
    pub columns: &'a [String],
    /// The values, a row per row label.
    pub values: &'a [Vec<Option<f64>>],
}

/// A matrix of values as a heatmap, coloured within `(lo, hi)` (see [`range`]): rows top to
/// bottom, columns left to right, a line after each index in `breaks` (group boundaries);
/// empty cells stay white.
pub(crate) fn heatmap(
    title: &str,
    cells_of: Cells,
    breaks: &[usize],
    unit: &str,
    (lo, hi): (f64, f64),
) -> Markup {
    let Cells {
        rows,
        columns,
        values,
    } = cells_of;
    let present = || values.iter().flatten().flatten().copied();
    let side = (WIDTH - RIGHT - LEFT).min(HEIGHT * 2.0);
    let cell = side / rows.len().max(columns.len()).max(1) as f64;
    let cells = present().count();
    let as_rects = rows.len() * columns.len() <= CELLS_AS_RECTS;
    let labels = rows.len().max(columns.len()) <= 32;
    let runs = if as_rects {
        Vec::new()
    } else {
        level_paths(values, lo, hi, cell)
    };
    let points = if as_rects { cells } else { runs.len() };
    html! {
        svg.chart viewBox=(format!("0 0 {WIDTH} {}", side + TOP + 30.0)) role="img" aria-label=(title)
            data-points=(points) {
            g transform=(format!("translate({LEFT} {TOP})")) {
                @if as_rects {
                    @for (r, row) in values.iter().enumerate() {
                        @for (c, v) in row.iter().enumerate() {
                            @if let Some(v) = v {
                                rect.pt x=(r1(c as f64 * cell)) y=(r1(r as f64 * cell)) width=(r1(cell)) height=(r1(cell))
                                    fill=(HEAT[heat(*v, lo, hi)]) {}
                            }
                        }
                    }
                } @else {
                    @for (level, d) in &runs {
                        path.pt fill=(HEAT[*level]) d=(d) {}
                    }
                }
                @for &b in breaks {
                    @let at = r1((b + 1) as f64 * cell);
                    line x1=(at) y1="0" x2=(at) y2=(r1(side)) stroke="#000" stroke-width="0.7" {}
                    line x1="0" y1=(at) x2=(r1(side)) y2=(at) stroke="#000" stroke-width="0.7" {}
                }
                @if labels {
                    @for (i, label) in rows.iter().enumerate() {
                        text x="-4" y=(r1((i as f64 + 0.7) * cell)) text-anchor="end" fill="#222" { (label) }
                    }
                    @for (i, label) in columns.iter().enumerate() {
                        text x=(r1((i as f64 + 0.5) * cell)) y=(r1(side + 14.0)) text-anchor="middle" fill="#222" { (label) }
                    }
                }
            }
            (heat_legend(lo, hi, unit, TOP))
        }
    }
}

/// Large matrices: per colour level, one path of the horizontal runs of cells of that level
/// (`M x y h w v cell h -w z` per run), so size grows with the runs, not the cells.
fn level_paths(values: &[Vec<Option<f64>>], lo: f64, hi: f64, cell: f64) -> Vec<(usize, String)> {
    let mut paths = vec![Page::new(); HEAT.len()];
    for (r, row) in values.iter().enumerate() {
        let mut c = 0;
        while c < row.len() {
            let Some(v) = row[c] else {
                c += 1;
                continue;
            };
            let level = heat(v, lo, hi);
            let start = c;
            while c < row.len() && row[c].is_some_and(|w| heat(w, lo, hi) == level) {
                c += 1;
            }
            let w = (c - start) as f64 * cell;
            write!(
                paths[level],
                "M{:.1} {:.1}h{w:.1}v{cell:.2}h-{w:.1}z",
                start as f64 * cell,
                r as f64 * cell
            );
        }
    }
    paths
        .into_iter()
        .enumerate()
        .filter(|(_, d)| !d.as_str().is_empty())
        .map(|(level, d)| (level, d.into_string()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_scale_spans_whole_decades() {
        let s = Scale::over([3.0, 450.0].into_iter(), Axis::Log, 0.0, 100.0);
        assert_eq!((s.lo, s.hi), (1.0, 1000.0));
        assert_eq!(s.ticks(), vec![1.0, 10.0, 100.0, 1000.0]);
        assert!((s.at(10.0) - 100.0 / 3.0).abs() < 1e-9);
    }

    #[test]
    fn linear_scale_ends_on_a_round_number() {
        let s = Scale::over([0.0, 87.0].into_iter(), Axis::Linear, 0.0, 100.0);
        assert_eq!(s.hi, 100.0);
        assert_eq!(s.ticks(), vec![0.0, 20.0, 40.0, 60.0, 80.0, 100.0]);
    }

    #[test]
    fn numbers_lose_trailing_zeros() {
        assert_eq!(num(1000.0), "1000");
        assert_eq!(num(0.25), "0.25");
        assert_eq!(num(12.345), "12.3");
    }

    #[test]
    fn every_point_is_drawn_and_counted() {
        let series = [Series {
            label: "<b>run</b>".to_string(),
            points: vec![(1.0, 5.0), (2.0, 50.0), (3.0, 1.0)],
        }];
        let svg = plot(&Plot {
            title: "t",
            x_label: "x",
            y_label: "y",
            x: Axis::Linear,
            y: Axis::Log,
            mark: Mark::Bars,
            series: &series,
        })
        .into_string();
        assert_eq!(svg.matches("class=\"pt\"").count(), 3);
        assert!(svg.contains("data-points=\"3\""));
        assert!(svg.contains("&lt;b&gt;run&lt;/b&gt;"));
    }

    #[test]
    fn one_value_is_said_once_in_the_middle_colour() {
        let svg = strip("max", &[(3, 1208.0)], "µs", range([1208.0])).into_string();
        assert!(svg.contains("all 1208 µs"), "{svg}");
        assert!(!svg.contains(HEAT[0]), "the palest colour reads low");
        assert!(svg.contains(HEAT[HEAT.len() / 2]));
    }

    #[test]
    fn a_single_event_on_a_log_count_axis_is_a_decade_tall_and_labelled_one() {
        let s = Scale::over([1.0, 30.0, 500.0].into_iter(), Axis::Log, 300.0, 0.0);
        assert_eq!(s.ticks(), vec![1.0, 10.0, 100.0, 1000.0]);
        assert!((s.at(s.lo) - s.at(1.0)).abs() >= 300.0 / 4.0 - 1e-9);
    }

    #[test]
    fn a_discrete_axis_labels_whole_numbers_and_a_spread_axis_leaves_out_zero() {
        let x = Scale::over([0.0, 1.0].into_iter(), Axis::Discrete, 0.0, 100.0);
        assert_eq!(x.ticks(), vec![0.0, 1.0]);
        assert_eq!((x.at(0.0), x.at(1.0)), (25.0, 75.0));
        let y = Scale::over([3673.6, 3693.9].into_iter(), Axis::Spread, 100.0, 0.0);
        assert!(
            y.cut() && y.lo > 3600.0 && y.lo < 3673.6 && y.hi > 3693.9,
            "{y:?}"
        );
        let wide = Scale::over([100.0, 3693.9].into_iter(), Axis::Spread, 100.0, 0.0);
        assert_eq!(wide.lo, 0.0);
    }

    #[test]
    fn large_matrices_are_drawn_as_runs_per_level() {
        let n = 100;
        let values: Vec<Vec<Option<f64>>> = (0..n)
            .map(|r| {
                (0..n)
                    .map(|c| Some(if r / 50 == c / 50 { 40.0 } else { 120.0 }))
                    .collect()
            })
            .collect();
        let labels: Vec<String> = (0..n).map(|i| i.to_string()).collect();
        let cells = Cells {
            rows: &labels,
            columns: &labels,
            values: &values,
        };
        let svg = heatmap("c2c", cells, &[49], "ns", (40.0, 120.0)).into_string();
        assert_eq!(svg.matches("<path class=\"pt\"").count(), 2);
        // Two runs per row, one per block.
        assert_eq!(svg.matches('z').count(), 2 * n);
    }
}

/// One part of the bars of a [`stacked_bars`] chart: its name in the legend and its colour.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Part<'a> {
    /// The name (`fail`).
    pub name: &'a str,
    /// The fill colour.
    pub colour: &'a str,
}

/// Height of one bar of a [`stacked_bars`] chart, px.
const STACK_ROW: f64 = 14.0;

/// Narrowest legend entry below a [`stacked_bars`] chart, px.
const STACK_LEGEND_ENTRY: f64 = 100.0;

/// Horizontal bars, one per row (its label left of it), each split into `parts` in order:
/// how the quantity (`unit`: hosts, µs) of each row divides. One scale for every row, so bars
/// of rows with less are shorter; empty parts are not drawn. The legend's entries are as wide
/// as its longest name needs (at least [`STACK_LEGEND_ENTRY`]) and wrap at the chart's width.
pub(crate) fn stacked_bars(
    title: &str,
    parts: &[Part],
    rows: &[(String, Vec<f64>)],
    unit: &str,
) -> Markup {
    let longest = rows
        .iter()
        .map(|(l, _)| l.chars().count())
        .max()
        .unwrap_or(0);
    // Labels are upper-case ids (`LL-SYSCTL-…`): about 7.4 px a character at 11 px.
    let left = (longest as f64 * 7.4 + 12.0).clamp(LEFT, 420.0);
    let span = WIDTH - PLOT_RIGHT - left;
    let most = rows
        .iter()
        .map(|(_, values)| values.iter().sum::<f64>())
        .fold(0.0, f64::max);
    let most = if most > 0.0 { most } else { 1.0 };
    let drawn = rows
        .iter()
        .flat_map(|(_, values)| values.iter())
        .filter(|&&v| v > 0.0)
        .count();
    let bottom = TOP + rows.len() as f64 * STACK_ROW;
    // Legend names are lower case at 11 px: about 6.6 px a character, after the swatch.
    let longest_name = parts
        .iter()
        .map(|p| p.name.chars().count())
        .max()
        .unwrap_or(0);
    let entry = (longest_name as f64 * 6.6 + 24.0).max(STACK_LEGEND_ENTRY);
    let per_line = (((WIDTH - PLOT_RIGHT - LEFT) / entry) as usize).max(1);
    let legend_lines = parts.len().div_ceil(per_line).max(1);
    let height = bottom + BOTTOM + LEGEND_LINE * legend_lines as f64;
    let at = |v: f64| left + span * v / most;
    // Each row's non-empty parts: (part, value, where it starts).
    let segments: Vec<Vec<(&Part, f64, f64)>> = rows
        .iter()
        .map(|(_, values)| {
            let mut from = 0.0;
            parts
                .iter()
                .zip(values)
                .filter_map(|(part, &v)| {
                    from += v;
                    (v > 0.0).then_some((part, v, from - v))
                })
                .collect()
        })
        .collect();
    html! {
        svg.chart viewBox=(format!("0 0 {WIDTH} {height}")) role="img" aria-label=(title)
            data-points=(drawn) {
            @for (r, ((label, _), row)) in rows.iter().zip(&segments).enumerate() {
                @let y = TOP + r as f64 * STACK_ROW;
                text x=(r1(left - 6.0)) y=(r1(y + STACK_ROW - 3.0)) text-anchor="end" fill="#222" { (label) }
                @for &(part, v, from) in row {
                    rect.pt x=(r1(at(from))) y=(r1(y + 1.0)) width=(r1(at(from + v) - at(from)))
                        height=(r1(STACK_ROW - 2.0)) fill=(part.colour) {
                        title { (label) ": " (num(v)) " " (unit) " " (part.name) }
                    }
                }
            }
            g.axes stroke="#888" fill="#222" {
                line x1=(r1(left)) y1=(r1(bottom)) x2=(r1(left + span)) y2=(r1(bottom)) {}
                @for t in [0.0, most / 2.0, most] {
                    line x1=(r1(at(t))) y1=(r1(bottom)) x2=(r1(at(t))) y2=(r1(bottom + 4.0)) {}
                    text x=(r1(at(t))) y=(r1(bottom + 16.0)) text-anchor="middle" stroke="none" { (num(t)) }
                }
                text x=(r1(left + span / 2.0)) y=(r1(bottom + 34.0)) text-anchor="middle" stroke="none" { (unit) }
            }
            @for (i, part) in parts.iter().enumerate() {
                @let x = LEFT + (i % per_line) as f64 * entry;
                @let y = bottom + BOTTOM + (i / per_line) as f64 * LEGEND_LINE;
                rect x=(r1(x)) y=(r1(y)) width="10" height="10" fill=(part.colour) {}
                text.legend x=(r1(x + 14.0)) y=(r1(y + 9.0)) fill="#222" { (part.name) }
            }
        }
    }
}
