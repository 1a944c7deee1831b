import PostbackKit

/// Charts as inline SVG, drawn by our code: no script, no external resource, the same bytes
/// in a browser, an email and a file.
///
/// Every chart is drawn in a 640 × 300 view box that CSS scales to its column; axes and labels
/// are SVG text, the legend is HTML beside it, and the numbers are in a table after it
/// (``DashboardPage``).
struct SVGChart {
    static let width = 640.0
    static let height = 300.0
    static let left = 64.0
    static let right = 16.0
    static let top = 14.0
    static let bottom = 40.0
    static var plotWidth: Double { width - left - right }
    static var plotHeight: Double { height - top - bottom }

    /// Colour-blind-safe colours (Okabe and Ito), the last for "other".
    static let palette = ["#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#8C6D1F", "#999999"]

    /// A named series of values, one per category (day, fine value, tier).
    struct Series {
        var name: String
        var color: String
        var values: [Double]
        /// Drawn dashed (a line chart's modeled series beside the observed one).
        var dashed = false
    }

    /// The text naming a category on the x axis.
    var labels: [String]
    /// The axis titles.
    var xTitle: String
    var yTitle: String
    /// How a y value is written on the axis.
    var yFormat: (Double) -> String = compactNumber
    /// Categories drawn lighter (stacked bars): install dates whose numbers are still growing.
    var faded: Set<Int> = []

    // MARK: - Kinds

    /// Bars per category, each series stacked on the ones before.
    func stackedBars(_ series: [Series], id: String, title: String, description: String) -> String {
        let totals = labels.indices.map { index in series.reduce(0) { $0 + ($1.values[safe: index] ?? 0) } }
        let scale = YScale(maximum: totals.max() ?? 0)
        var body = ""
        let slot = Self.plotWidth / Double(max(labels.count, 1))
        let gap = slot > 6 ? slot * 0.2 : 0
        var base = Array(repeating: 0.0, count: labels.count)
        for item in series {
            var path = ""
            for index in labels.indices {
                let value = item.values[safe: index] ?? 0
                guard value > 0 else { continue }
                let y0 = scale.y(base[index])
                let y1 = scale.y(base[index] + value)
                base[index] += value
                let x = Self.left + Double(index) * slot + gap / 2
                path += "M\(fixed(x)) \(fixed(y1))h\(fixed(slot - gap))V\(fixed(y0))h\(fixed(gap - slot))Z"
            }
            if !path.isEmpty { body += "<path fill=\"\(item.color)\" d=\"\(path)\"/>" }
        }
        // A faded category: its bars behind a white veil, so a day still growing reads apart.
        var veil = ""
        for index in faded.sorted() where labels.indices.contains(index) {
            let x = Self.left + Double(index) * slot + gap / 2
            veil +=
                "M\(fixed(x)) \(fixed(Self.top))h\(fixed(slot - gap))V\(fixed(Self.height - Self.bottom))h\(fixed(gap - slot))Z"
        }
        if !veil.isEmpty { body += "<path class=\"growing\" fill=\"#ffffff\" fill-opacity=\"0.55\" d=\"\(veil)\"/>" }
        return svg(id: id, title: title, description: description, scale: scale, body: body, centred: true)
    }

    /// A line per series, points at each category; `band` (low, high per category) is shaded
    /// behind the first series.
    func lines(
        _ series: [Series],
        band: (low: [Double], high: [Double])? = nil,
        maximum: Double? = nil,
        id: String,
        title: String,
        description: String
    ) -> String {
        let top =
            maximum
            ?? max(series.flatMap(\.values).filter { !$0.isNaN }.max() ?? 0, band?.high.filter { !$0.isNaN }.max() ?? 0)
        let scale = YScale(maximum: top)
        let slot = Self.plotWidth / Double(max(labels.count, 1))
        func x(_ index: Int) -> Double { Self.left + (Double(index) + 0.5) * slot }
        var body = ""
        if let band, !band.low.isEmpty {
            // A day that is not a number on either edge breaks the band, as it breaks a line.
            var runs: [[Int]] = [[]]
            for index in band.high.indices {
                if band.high[index].isNaN || band.low[safe: index]?.isNaN != false {
                    if !(runs.last ?? []).isEmpty { runs.append([]) }
                } else {
                    runs[runs.count - 1].append(index)
                }
            }
            var path = ""
            for run in runs where run.count > 1 {
                path += "M"
                for index in run { path += "\(fixed(x(index))) \(fixed(scale.y(band.high[index])))L" }
                for index in run.reversed() { path += "\(fixed(x(index))) \(fixed(scale.y(band.low[index])))L" }
                path.removeLast()
                path += "Z"
            }
            if !path.isEmpty {
                body += "<path fill=\"\(series.first?.color ?? Self.palette[0])\" fill-opacity=\"0.18\" d=\"\(path)\"/>"
            }
        }
        for item in series {
            // A value that is not a number (no data that day) breaks the line.
            var runs: [[Int]] = [[]]
            for index in item.values.indices {
                if item.values[index].isNaN {
                    if !(runs.last ?? []).isEmpty { runs.append([]) }
                } else {
                    runs[runs.count - 1].append(index)
                }
            }
            for run in runs where !run.isEmpty {
                if run.count == 1 {
                    body +=
                        "<circle r=\"3\" fill=\"\(item.color)\" cx=\"\(fixed(x(run[0])))\" cy=\"\(fixed(scale.y(item.values[run[0]])))\"/>"
                } else {
                    let points = run.map { "\(fixed(x($0))),\(fixed(scale.y(item.values[$0])))" }
                    body +=
                        "<polyline fill=\"none\" stroke=\"\(item.color)\" stroke-width=\"2\" stroke-linejoin=\"round\"\(item.dashed ? " stroke-dasharray=\"6 4\"" : "") points=\"\(points.joined(separator: " "))\"/>"
                }
            }
        }
        return svg(id: id, title: title, description: description, scale: scale, body: body, centred: true)
    }

    // MARK: - Frame

    /// The chart's frame: title and description for assistive technology, gridlines, axes,
    /// tick labels and axis titles around `body`.
    private func svg(
        id: String,
        title: String,
        description: String,
        scale: YScale,
        body: String,
        centred: Bool
    ) -> String {
        var out =
            "<svg viewBox=\"0 0 \(Int(Self.width)) \(Int(Self.height))\" role=\"img\" aria-labelledby=\"\(id)-t \(id)-d\" xmlns=\"http://www.w3.org/2000/svg\">"
        out +=
            "<title id=\"\(id)-t\">\(escapeHTML(title))</title><desc id=\"\(id)-d\">\(escapeHTML(description))</desc>"
        out += "<g class=\"grid\">"
        for tick in scale.ticks {
            let y = fixed(scale.y(tick))
            out += "<line x1=\"\(fixed(Self.left))\" x2=\"\(fixed(Self.width - Self.right))\" y1=\"\(y)\" y2=\"\(y)\"/>"
        }
        out += "</g><g class=\"ylabels\">"
        for tick in scale.ticks {
            out +=
                "<text x=\"\(fixed(Self.left - 6))\" y=\"\(fixed(scale.y(tick) + 4))\">\(escapeHTML(yFormat(tick)))</text>"
        }
        out += "</g>"
        out += body
        let baseline = fixed(Self.top + Self.plotHeight)
        out +=
            "<line class=\"axis\" x1=\"\(fixed(Self.left))\" x2=\"\(fixed(Self.width - Self.right))\" y1=\"\(baseline)\" y2=\"\(baseline)\"/>"
        out += "<g class=\"xlabels\">"
        let slot = Self.plotWidth / Double(max(labels.count, 1))
        for index in labelIndices {
            let x = Self.left + (Double(index) + (centred ? 0.5 : 0)) * slot
            out +=
                "<text x=\"\(fixed(x))\" y=\"\(fixed(Self.top + Self.plotHeight + 16))\">\(escapeHTML(labels[index]))</text>"
        }
        out += "</g>"
        out +=
            "<text class=\"xtitle\" x=\"\(fixed(Self.left + Self.plotWidth / 2))\" y=\"\(fixed(Self.height - 4))\">\(escapeHTML(xTitle))</text>"
        out +=
            "<text class=\"ytitle\" transform=\"rotate(-90)\" x=\"\(fixed(-(Self.top + Self.plotHeight / 2)))\" y=\"14\">\(escapeHTML(yTitle))</text>"
        return out + "</svg>"
    }

    /// Which categories get a label: all when they fit, else evenly spaced, always the last.
    private var labelIndices: [Int] {
        let fitting = max(1, Int(Self.plotWidth / (Double(labels.map(\.count).max() ?? 5) * 8 + 10)))
        guard labels.count > fitting else { return Array(labels.indices) }
        let step = (labels.count + fitting - 1) / fitting
        var indices = Array(stride(from: 0, to: labels.count, by: step))
        // The last category always: instead of the last evenly spaced one when that is too near.
        if let last = indices.last, last != labels.count - 1 {
            if labels.count - 1 - last < step { indices.removeLast() }
            indices.append(labels.count - 1)
        }
        return indices
    }
}

/// A y axis from 0 to a round maximum, with four or five round ticks.
struct YScale {
    let ticks: [Double]
    let top: Double

    init(maximum: Double) {
        let step = Self.step(maximum)
        var ticks: [Double] = [0]
        var top = 0.0
        while top < maximum - step * 1e-9 || ticks.count == 1 {
            top = Double(ticks.count) * step
            ticks.append(top)
        }
        self.ticks = ticks
        self.top = top
    }

    /// A round step near a quarter of `maximum` (1, 2, 2.5 or 5 times a power of ten).
    static func step(_ maximum: Double) -> Double {
        guard maximum > 0, maximum.isFinite else { return 1 }
        let raw = maximum / 4
        var magnitude = 1.0
        while magnitude * 10 <= raw { magnitude *= 10 }
        while magnitude > raw { magnitude /= 10 }
        for factor in [1.0, 2, 2.5, 5] where factor * magnitude >= raw { return factor * magnitude }
        return 10 * magnitude
    }

    func y(_ value: Double) -> Double {
        SVGChart.top + SVGChart.plotHeight * (1 - (top > 0 ? value / top : 0))
    }
}

extension Array {
    subscript(safe index: Int) -> Element? { indices.contains(index) ? self[index] : nil }
}

/// A coordinate with at most one decimal, as SVG takes it.
func fixed(_ value: Double) -> String {
    let tenths = Int64((value * 10).rounded())
    let sign = tenths < 0 ? "-" : ""
    let magnitude = tenths.magnitude
    return magnitude % 10 == 0 ? "\(sign)\(magnitude / 10)" : "\(sign)\(magnitude / 10).\(magnitude % 10)"
}

/// `1200` as `1.2k`, `3000000` as `3M`: an axis label.
func compactNumber(_ value: Double) -> String {
    let magnitude = abs(value)
    for (limit, suffix) in [(1e9, "G"), (1e6, "M"), (1e3, "k")] where magnitude >= limit {
        return decimal(value / limit, fractionDigits: value.truncatingRemainder(dividingBy: limit) == 0 ? 0 : 1)
            + suffix
    }
    return decimal(value, fractionDigits: value == value.rounded() ? 0 : 2)
}

/// `value` with `fractionDigits` decimals and thousands separated by commas.
func decimal(_ value: Double, fractionDigits: Int) -> String {
    guard value.isFinite else { return "–" }
    var scale: Int64 = 1
    for _ in 0..<fractionDigits { scale *= 10 }
    let scaled = Int64((abs(value) * Double(scale)).rounded())
    var whole = String(scaled / scale)
    var grouped = ""
    while whole.count > 3 {
        grouped = "," + whole.suffix(3) + grouped
        whole.removeLast(3)
    }
    grouped = whole + grouped
    let sign = value < 0 && scaled != 0 ? "-" : ""
    guard fractionDigits > 0 else { return sign + grouped }
    let fraction = String(scaled % scale)
    return sign + grouped + "." + String(repeating: "0", count: fractionDigits - fraction.count) + fraction
}

/// A count with thousands separators.
func count(_ value: Int) -> String { decimal(Double(value), fractionDigits: 0) }

/// `0.1234` as `12.3%`.
func percent(_ ratio: Double) -> String { decimal(ratio * 100, fractionDigits: 1) + "%" }
