"use strict";
// ruleproof's HTML report (reporting/html.hpp): draws the runs embedded in #ruleproof-data.
// Every number shown is read from the runs; nothing is fetched.
(function () {
  const status = window.ruleproofStatus;
  const data = JSON.parse(document.getElementById("ruleproof-data").textContent);
  const report = document.getElementById("report");
  const SVGNS = "http://www.w3.org/2000/svg";
  const palette = ["#1f6fb4", "#d1452b", "#2c9a3c", "#8a56b8", "#e08a12", "#1aa3b5", "#8c5a3c",
                   "#d4559c"];
  let clipCount = 0;

  // The format writes infinities and NaN as strings, and null where nothing was measured.
  function num(x) {
    if (typeof x === "number") return x;
    if (x === "inf") return Infinity;
    if (x === "-inf") return -Infinity;
    return NaN;
  }
  function fmtNum(x) {
    if (x === null || x === undefined) return "\u2014";
    const v = num(x);
    if (Number.isNaN(v)) return "nan";
    if (!Number.isFinite(v)) return v > 0 ? "inf" : "-inf";
    if (v === 0) return "0";
    const a = Math.abs(v);
    return a >= 1e-3 && a < 1e4 ? String(+v.toPrecision(3)) : v.toExponential(2);
  }

  function h(tag, attrs, ...kids) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
    for (const c of kids)
      if (c !== null && c !== undefined) e.append(c instanceof Node ? c : String(c));
    return e;
  }
  function svg(tag, attrs, parent, text) {
    const e = document.createElementNS(SVGNS, tag);
    for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
    if (text !== undefined) e.textContent = text;
    parent.appendChild(e);
    return e;
  }
  function section(title, intro) {
    const s = h("section", {}, h("h2", {}, title));
    if (intro) s.append(h("p", { class: "intro" }, intro));
    report.append(s);
    return s;
  }

  // Axes: a log axis spans whole decades; a linear one is padded to nice steps.
  function drawable(x, log) { return Number.isFinite(x) && (!log || x > 0); }
  function extent(values, log) {
    let lo = Infinity, hi = -Infinity;
    for (const v of values)
      if (drawable(v, log)) { lo = Math.min(lo, v); hi = Math.max(hi, v); }
    if (lo > hi) return null;
    if (log) {
      lo = 10 ** Math.floor(Math.log10(lo));
      hi = 10 ** Math.ceil(Math.log10(hi));
      if (lo === hi) { lo /= 10; hi *= 10; }
    } else if (lo === hi) { lo -= 1; hi += 1; }
    return [lo, hi];
  }
  function scale(range, log, a, b) {
    const f = log ? Math.log10 : (x) => x;
    const l = f(range[0]), span = f(range[1]) - l || 1;
    return (x) => a + ((f(x) - l) / span) * (b - a);
  }
  function ticks(range, log) {
    const out = [];
    if (log) {
      const a = Math.round(Math.log10(range[0])), b = Math.round(Math.log10(range[1]));
      const step = Math.max(1, Math.ceil((b - a) / 7));
      for (let e = a; e <= b; e += step) out.push(10 ** e);
      return out;
    }
    const raw = (range[1] - range[0]) / 6, mag = 10 ** Math.floor(Math.log10(raw));
    const step = [1, 2, 5, 10].map((m) => m * mag).find((s) => s >= raw);
    for (let t = Math.ceil(range[0] / step) * step; t <= range[1] + step * 1e-9; t += step)
      out.push(+t.toPrecision(12));
    return out;
  }
  function tickLabel(t, log) {
    if (!log) return String(t);
    const e = Math.round(Math.log10(t));
    return e === 0 ? "1" : e === 1 ? "10" : "1e" + e;
  }

  // One plot: series of [x, y, tip] points drawn as lines (broken where a point cannot be
  // drawn) and/or dots; lines y = k x across the plot; vertical marks. A point whose y is not
  // finite is marked at the top edge, so a NaN is seen, not dropped.
  function plot(o) {
    const W = 620, H = 330, L = 72, R = 14, T = 14, B = 46;
    const fig = h("figure", { class: "plot" });
    fig.append(h("figcaption", { class: "title" }, o.title));
    const xs = [], ys = [];
    let zeros = 0, shown = 0;
    for (const s of o.series)
      for (const p of s.pts) {
        xs.push(p[0]);
        ys.push(p[1]);
        if (o.ylog && p[1] === 0) zeros++;
        if (drawable(p[0], o.xlog) && drawable(p[1], o.ylog)) shown++;
      }
    let dx = extent(xs, o.xlog);
    const dy = extent(ys, o.ylog);
    if (dx && o.xlog && o.xticks) // given ticks: the axis spans them, not whole decades
      dx = [Math.min(...o.xticks) / 1.3, Math.max(...o.xticks) * 1.3];
    if (!dx || !dy || shown === 0) {
      status.empty_plots.push(o.title);
      fig.append(h("p", { class: "empty" }, "nothing to draw: no finite" +
                   (o.ylog ? ", positive" : "") + " value"));
      return fig;
    }
    const X = scale(dx, o.xlog, L, W - R), Y = scale(dy, o.ylog, H - B, T);
    const root = svg("svg", { viewBox: `0 0 ${W} ${H}`, role: "img" }, fig);
    const clip = "clip" + ++clipCount;
    svg("rect", { x: L, y: T, width: W - R - L, height: H - B - T }, svg("clipPath", { id: clip }, root));
    for (const t of o.xticks || ticks(dx, o.xlog)) {
      if (t < dx[0] || t > dx[1]) continue;
      svg("line", { x1: X(t), x2: X(t), y1: T, y2: H - B, class: "grid" }, root);
      svg("text", { x: X(t), y: H - B + 15, class: "tick", "text-anchor": "middle" }, root,
          tickLabel(t, o.xlog && !o.xticks));
    }
    for (const t of ticks(dy, o.ylog)) {
      svg("line", { x1: L, x2: W - R, y1: Y(t), y2: Y(t), class: "grid" }, root);
      svg("text", { x: L - 6, y: Y(t) + 4, class: "tick", "text-anchor": "end" }, root,
          tickLabel(t, o.ylog));
    }
    for (const v of o.verticals || [])
      svg("line", { x1: X(v), x2: X(v), y1: T, y2: H - B, class: "mark" }, root);
    svg("rect", { x: L, y: T, width: W - R - L, height: H - B - T, class: "frame" }, root);
    svg("text", { x: (L + W - R) / 2, y: H - 8, class: "label", "text-anchor": "middle" }, root,
        o.xlabel);
    svg("text", { x: 14, y: (T + H - B) / 2, class: "label", "text-anchor": "middle",
                  transform: `rotate(-90 14 ${(T + H - B) / 2})` }, root, o.ylabel);
    const area = svg("g", { "clip-path": `url(#${clip})` }, root);
    for (const l of o.lines || []) {
      const x0 = dx[0], x1 = dx[1];
      svg("path", { d: `M${X(x0)},${Y(l.k * x0)}L${X(x1)},${Y(l.k * x1)}`, stroke: l.color,
                    "stroke-dasharray": "6 4", class: "ref" }, area);
      status.paths++;
    }
    const legend = h("div", { class: "legend" });
    for (const s of o.series) {
      if (s.style !== "dots") {
        let d = "", pen = false;
        for (const p of s.pts) {
          if (drawable(p[0], o.xlog) && drawable(p[1], o.ylog)) {
            d += (pen ? "L" : "M") + X(p[0]).toFixed(1) + "," + Y(p[1]).toFixed(1);
            pen = true;
          } else pen = false;
        }
        if (d) {
          svg("path", { d, stroke: s.color, "stroke-dasharray": s.dash || "none", class: "series" }, area);
          status.paths++;
        }
      }
      for (const p of s.pts) {
        if (!drawable(p[0], o.xlog)) continue;
        if (!Number.isFinite(p[1])) {
          const m = svg("text", { x: X(p[0]), y: T + 10, class: "notfinite", "text-anchor": "middle" },
                        root, "\u00d7");
          svg("title", {}, m, (p[2] || "") + " (not finite)");
          status.points++;
        } else if (s.style !== "line" && drawable(p[1], o.ylog)) {
          const c = svg("circle", { cx: X(p[0]), cy: Y(p[1]), r: s.r || 3.5, fill: s.color,
                                    class: s.fails ? "dot fails" : "dot" }, area);
          svg("title", {}, c, p[2] || `${fmtNum(p[0])}, ${fmtNum(p[1])}`);
          status.points++;
        }
      }
      const sw = h("span", { class: "swatch" });
      sw.style.background = s.color;
      if (s.dash) sw.style.opacity = "0.55";
      legend.append(h("span", { class: "key" }, sw, s.name));
    }
    for (const l of o.lines || []) {
      const sw = h("span", { class: "swatch dashed" });
      sw.style.borderColor = l.color;
      legend.append(h("span", { class: "key" }, sw, l.name));
    }
    fig.append(legend);
    let caption = o.caption || "";
    if (zeros) caption += ` ${zeros} value${zeros > 1 ? "s" : ""} equal to 0 not drawn (log axis).`;
    fig.append(h("p", { class: "caption" }, caption));
    status.plots++;
    return fig;
  }

  function grid(sec) { const g = h("div", { class: "plots" }); sec.append(g); return g; }
  function each(key, f) {
    data.runs.forEach((run, i) => ((run.details || {})[key] || []).forEach((x) => f(x, run, data.sources[i])));
  }

  // The runs.
  {
    const sec = section("Runs");
    const rows = data.runs.map((r, i) => [data.sources[i], r.command, r.verdict, r.counts.holds,
      r.counts.fails, r.counts.undecided, r.counts.ambiguous, r.seed === null ? "\u2014" : r.seed,
      r.tool.version + (r.tool.commit ? " " + r.tool.commit : ""), r.machine.host + " (" +
      r.machine.cpus + " cpus" + (r.machine.gpu ? "; " + r.machine.gpu : "") + ")", r.started,
      fmtNum(r.seconds) + " s", r.command_line + (r.skipped ? " \u2014 skipped: " + r.skipped : "")]);
    const t = h("table", { class: "runs" });
    t.append(h("thead", {}, h("tr", {}, ...["file", "command", "verdict", "holds", "fails",
      "undecided", "ambiguous", "seed", "version", "machine", "started", "time",
      "command line"].map((c) => h("th", {}, c)))));
    const body = h("tbody");
    for (const r of rows)
      body.append(h("tr", {}, ...r.map((c, k) => h("td", k === 2 ? { class: "v-" + c } : {}, c))));
    t.append(body);
    sec.append(t);
  }

  // Error along the sequence: per time step and per chunk, one colour per head.
  {
    const profiles = [];
    each("profiles", (p, run, source) => profiles.push([p, run, source]));
    if (profiles.length) {
      const g = grid(section("Error along the sequence",
        "The worst |error| against the float128 truth at each time step t (solid) and the worst " +
        "in each chunk (dashed steps), over the batch and the feature dimension, one colour per " +
        "head; grey lines mark chunk boundaries."));
      for (const [p, run, source] of profiles) {
        const T = p.time.length ? p.time[0].length : 0, C = p.chunk_size, series = [], marks = [];
        p.time.forEach((row, head) => {
          const color = palette[head % palette.length];
          series.push({ name: `head ${head}, per step`, color, style: "line",
                        pts: row.map((e, t) => [t, num(e), `t = ${t}, head ${head}: ${fmtNum(e)}`]) });
          series.push({ name: `head ${head}, worst in chunk`, color, style: "line", dash: "5 3",
                        pts: p.chunk[head].flatMap((e, c) =>
                          [[c * C, num(e)], [Math.min((c + 1) * C, T) - 1, num(e)]]) });
        });
        for (let c = C; c < T; c += C) marks.push(c - 0.5);
        const what = p.compared.split(" vs ")[0];
        g.append(plot({ title: `${p.rule} \u00b7 ${p.output} \u00b7 ${p.scalar}: ${what}`, xlabel: "time step t",
                        ylabel: "worst |error|", ylog: true, series, verticals: marks,
                        caption: `${p.compared}. ${p.case}; chunk size ${C}; max |truth| ` +
                                 `${fmtNum(p.truth_max)}. From ${source} (${run.command}).` }));
      }
    }
  }

  // Error growth against T: one plot per comparison, one line per rule.
  {
    const groups = new Map();
    each("growth", (gr, run, source) => {
      const key = gr.compared + " (" + gr.scalar + ")";
      if (!groups.has(key)) groups.set(key, []);
      groups.get(key).push([gr, source]);
    });
    if (groups.size) {
      const g = grid(section("Error growth against T",
        "The worst |error| of the output over the whole sequence, relative to the largest |truth|, " +
        "at each sequence length T (one drawn case per T)."));
      for (const [key, list] of groups) {
        const Ts = new Set(), cases = new Set(), series = [];
        list.forEach(([gr], k) => {
          gr.points.forEach((p) => Ts.add(p.T));
          cases.add(gr.case);
          series.push({ name: `${gr.rule} \u00b7 ${gr.output}`, color: palette[k % palette.length],
                        style: "both", pts: gr.points.map((p) => [p.T, num(p.error) / p.truth_max,
                          `${gr.rule}, T = ${p.T}: |error| ${fmtNum(p.error)}, max |truth| ` +
                          `${fmtNum(p.truth_max)}`]) });
        });
        g.append(plot({ title: `growth against T \u00b7 ${key}`, xlabel: "sequence length T",
                        ylabel: "worst |error| / max |truth|", xlog: true, ylog: true,
                        xticks: [...Ts].sort((a, b) => a - b), series,
                        caption: `${[...cases].join("; ")}. From ${[...new Set(list.map((x) => x[1]))].join(", ")}.` }));
      }
    }
  }

  // Kernel error against the emulated twin's, per run holding kernel results.
  {
    const runs = data.runs.map((r, i) => [r, data.sources[i]])
      .filter(([r]) => r.results.some((x) => x.details && x.details.twin_error !== undefined));
    if (runs.length) {
      const g = grid(section("Kernel error against its emulated twin",
        "Each kernel output's worst |error| against the float128 truth, against the twin's (the " +
        "reference in the kernel's precision) on the same input. An output holds within the " +
        "factor times the larger of the twin's error and a floor (one rounding of the largest " +
        "entry to the stored type), so a point above the factor's line may hold by the floor; " +
        "outlined dots fail."));
      for (const [r, source] of runs) {
        const byRule = new Map();
        let notFinite = 0;
        for (const x of r.results) {
          if (!x.details || x.details.twin_error === undefined) continue;
          if (!Number.isFinite(num(x.worst_error))) notFinite++;
          if (!byRule.has(x.rule)) byRule.set(x.rule, []);
          byRule.get(x.rule).push(x);
        }
        const series = [...byRule].map(([rule, xs], k) => ({
          name: rule, color: palette[k % palette.length], style: "dots", r: 3,
          pts: xs.map((x) => [num(x.details.twin_error), num(x.worst_error),
            `${x.id}: kernel ${fmtNum(x.worst_error)}, twin ${fmtNum(x.details.twin_error)}, ` +
            `allowed ${fmtNum(x.allowed_error)}, ${x.verdict}`]) }));
        const fails = r.results.filter((x) => x.details && x.details.twin_error !== undefined &&
                                              x.verdict === "fails");
        if (fails.length)
          series.push({ name: "fails", color: "none", style: "dots", r: 6, fails: true,
                        pts: fails.map((x) => [num(x.details.twin_error), num(x.worst_error), x.id + ": fails"]) });
        const factor = num(r.details.twin_factor);
        const lines = [{ name: "kernel = twin", k: 1, color: "#777" }];
        if (Number.isFinite(factor)) lines.push({ name: `kernel = ${factor} \u00d7 twin`, k: factor, color: "#c0392b" });
        g.append(plot({ title: `${r.command} \u00b7 ${source}`, xlabel: "twin's worst |error|",
                        ylabel: "kernel's worst |error|", xlog: true, ylog: true, series, lines,
                        caption: `${series.reduce((n, s) => n + (s.fails ? 0 : s.pts.length), 0)} outputs` +
                                 (notFinite ? `, ${notFinite} not finite (marked \u00d7 at the top)` : "") +
                                 `. ${r.machine.gpu || ""}` }));
      }
    }
  }

  // Every result, filtered by verdict, by note (claims) or rule, and by text.
  const order = { fails: 0, undecided: 1, ambiguous: 2, holds: 3 };
  data.runs.forEach((r, i) => {
    const claims = r.results.some((x) => x.kind === "claim");
    const groupName = claims ? "note" : "rule";
    const groupOf = (x) => (x.kind === "claim" ? x.id.split(".")[0] : x.rule || "");
    const sec = section(`Results \u00b7 ${r.command} \u00b7 ${data.sources[i]}`);
    const results = [...r.results].sort((a, b) => order[a.verdict] - order[b.verdict] ||
                                                  (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    const cols = claims
      ? ["claim", "note", "verdict", "statement", "decided by", "error", "allowed", "digits", "replay"]
      : ["id", "verdict", "worst error", "allowed", "error / allowed", "digits", "cases", "where"];
    const cells = (x) => claims
      ? [x.id, groupOf(x), x.verdict, x.details.statement || "", x.scalar, fmtNum(x.worst_error),
         fmtNum(x.allowed_error), fmtNum(x.digits), x.replay.command]
      : [x.id, x.verdict, fmtNum(x.worst_error), fmtNum(x.allowed_error),
         fmtNum(x.error_over_allowed), fmtNum(x.digits), x.cases, x.where ? x.where.text : ""];
    const verdict = h("select", { "aria-label": "verdict" }, h("option", { value: "" }, "every verdict"));
    for (const v of Object.keys(order))
      if (r.results.some((x) => x.verdict === v)) verdict.append(h("option", { value: v }, v));
    const group = h("select", { "aria-label": groupName }, h("option", { value: "" }, "every " + groupName));
    for (const gname of [...new Set(r.results.map(groupOf))].sort())
      group.append(h("option", { value: gname }, gname || "(none)"));
    const search = h("input", { type: "search", placeholder: "search text", "aria-label": "search" });
    const count = h("span", { class: "count" });
    sec.append(h("div", { class: "filters" }, verdict, group, search, count));
    const t = h("table", { class: "results" });
    t.append(h("thead", {}, h("tr", {}, ...cols.map((c) => h("th", {}, c)))));
    const body = h("tbody");
    for (const x of results) {
      const c = cells(x);
      const tr = h("tr", {}, ...c.map((v, k) => h("td", cols[k] === "verdict" ? { class: "v-" + v } : {}, v)));
      tr.dataset.verdict = x.verdict;
      tr.dataset.group = groupOf(x);
      tr.dataset.text = (c.join(" ") + " " + (x.details.quote || "") + " " + x.property).toLowerCase();
      if (x.details.quote) tr.title = x.details.quote;
      body.append(tr);
      status.rows++;
    }
    t.append(body);
    sec.append(h("div", { class: "scroll" }, t));
    const apply = () => {
      const q = search.value.trim().toLowerCase();
      let n = 0;
      for (const tr of body.rows) {
        const show = (!verdict.value || tr.dataset.verdict === verdict.value) &&
                     (!group.value || tr.dataset.group === group.value) &&
                     (!q || tr.dataset.text.includes(q));
        tr.hidden = !show;
        n += show ? 1 : 0;
      }
      count.textContent = `${n} of ${body.rows.length} shown`;
    };
    for (const e of [verdict, group]) e.addEventListener("change", apply);
    search.addEventListener("input", apply);
    apply();
    status.tables++;
  });

  status.state = "done";
  window.ruleproofShowStatus();
})();
