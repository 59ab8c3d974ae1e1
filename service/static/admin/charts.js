/* Charts as inline SVG, with a <title> per bar, and the numbers behind them as a table. */

import { el, svg, table } from "./dom.js";
import { fmtNumber } from "./format.js";

let chartIds = 0;

/** Whole-number ticks from 0 to at least `max`, at most 6 of them (counts never get 2.5). */
function countTicks(max) {
  let step = 1;
  while (Math.ceil(max / step) > 5) {
    const pow = Math.pow(10, Math.floor(Math.log10(step)));
    const m = step / pow;
    step = (m < 2 ? 2 : m < 5 ? 5 : 10) * pow;
  }
  const top = Math.max(1, Math.ceil(max / step)) * step;
  return Array.from({ length: top / step + 1 }, (_, i) => i * step);
}

function truncate(text, n) {
  text = String(text);
  return text.length > n ? text.slice(0, n - 1) + "…" : text;
}

/** Horizontal bars, one per item: {label, value, title, href}; values on [0, max]. */
export function hbarChart(items, opts) {
  const max = opts.max || 1;
  const rowH = 28, labelW = 280, valueW = 64, width = 960, top = 8, axisH = 34;
  const plotW = width - labelW - valueW;
  const height = top + items.length * rowH + axisH;
  const id = "chart-" + (++chartIds);
  const chart = svg("svg", { class: "chart hbar", viewBox: "0 0 " + width + " " + height, role: "img",
    "aria-labelledby": id + "-t", dataset: { chart: opts.name || "" } },
  svg("title", { id: id + "-t" }, opts.caption));
  const ticks = opts.ticks || [0, 0.25, 0.5, 0.75, 1].map((t) => t * max);
  const baseY = top + items.length * rowH;
  for (const t of ticks) {
    const x = labelW + (t / max) * plotW;
    chart.append(svg("line", { class: "grid", x1: x, x2: x, y1: top, y2: baseY }),
      svg("text", { class: "tick", x, y: baseY + 16, "text-anchor": "middle" }, opts.format(t)));
  }
  chart.append(svg("line", { class: "axis", x1: labelW, x2: labelW, y1: top, y2: baseY }),
    svg("line", { class: "axis", x1: labelW, x2: labelW + plotW, y1: baseY, y2: baseY }));
  if (opts.axisLabel) {
    chart.append(svg("text", { class: "axis-label", x: labelW + plotW / 2, y: baseY + 31, "text-anchor": "middle" },
      opts.axisLabel));
  }
  items.forEach((item, i) => {
    const y = top + i * rowH;
    const value = Math.max(0, Math.min(max, Number(item.value) || 0));
    const w = (value / max) * plotW;
    const bar = svg("rect", { class: "bar", x: labelW, y: y + 5, width: Math.max(w, 1.5), height: rowH - 10,
      rx: 3, dataset: { label: item.label, value: String(item.value) } }, svg("title", {}, item.title));
    const row = svg("g", { class: "bar-row" },
      svg("text", { class: "bar-label", x: labelW - 10, y: y + rowH / 2 + 4, "text-anchor": "end" },
        truncate(item.label, 34)),
      bar,
      svg("text", { class: "bar-value", x: labelW + w + 6, y: y + rowH / 2 + 4 }, opts.format(item.value)));
    chart.append(item.href ? svg("a", { href: item.href, class: "bar-link" }, row) : row);
  });
  return el("figure", { class: "figure" }, chart, opts.legend ? el("figcaption", {}, opts.legend) : null);
}

/** Vertical bars: {label, value, inner?, title}; `inner` is drawn over the bar (e.g. passed of attempts). */
export function vbarChart(items, opts) {
  const width = 560, height = 250, left = 44, right = 10, top = 12, bottom = 50;
  const plotW = width - left - right, plotH = height - top - bottom;
  const ticks = countTicks(Math.max(1, ...items.map((i) => Number(i.value) || 0)));
  const max = ticks[ticks.length - 1];
  const id = "chart-" + (++chartIds);
  const chart = svg("svg", { class: "chart vbar", viewBox: "0 0 " + width + " " + height, role: "img",
    "aria-labelledby": id + "-t", dataset: { chart: opts.name || "" } },
  svg("title", { id: id + "-t" }, opts.caption));
  const baseY = top + plotH;
  for (const t of ticks) {
    const y = baseY - (t / max) * plotH;
    chart.append(svg("line", { class: "grid", x1: left, x2: left + plotW, y1: y, y2: y }),
      svg("text", { class: "tick", x: left - 6, y: y + 4, "text-anchor": "end" }, fmtNumber(t)));
  }
  chart.append(svg("line", { class: "axis", x1: left, x2: left, y1: top, y2: baseY }),
    svg("line", { class: "axis", x1: left, x2: left + plotW, y1: baseY, y2: baseY }));
  const slot = plotW / Math.max(1, items.length);
  const barW = Math.max(2, slot * 0.78);
  const every = Math.max(1, Math.ceil(items.length / (opts.maxLabels || 12)));
  items.forEach((item, i) => {
    const x = left + i * slot + (slot - barW) / 2;
    const h = ((Number(item.value) || 0) / max) * plotH;
    const g = svg("g", { class: "bar-col" },
      svg("rect", { class: "bar", x, y: baseY - h, width: barW, height: Math.max(h, item.value ? 1 : 0),
        dataset: { label: item.label, value: String(item.value) } }, svg("title", {}, item.title)));
    if (item.inner !== undefined) {
      const ih = ((Number(item.inner) || 0) / max) * plotH;
      g.append(svg("rect", { class: "bar bar-inner", x: x + barW * 0.2, y: baseY - ih, width: barW * 0.6, height: ih },
        svg("title", {}, item.title)));
    }
    if (i % every === 0) {
      g.append(svg("text", { class: "tick", x: x + barW / 2, y: baseY + 16, "text-anchor": "middle" },
        item.short || item.label));
    }
    chart.append(g);
  });
  if (opts.axisLabel) {
    chart.append(svg("text", { class: "axis-label", x: left + plotW / 2, y: height - 8, "text-anchor": "middle" },
      opts.axisLabel));
  }
  return el("figure", { class: "figure" }, chart, opts.legend ? el("figcaption", {}, opts.legend) : null);
}

/** The numbers behind a chart, as a table in a disclosure (for screen readers and copying). */
export function chartTable(summary, headers, rows) {
  return el("details", { class: "chart-table" }, el("summary", {}, summary),
    table(headers, rows.map((r) => el("tr", {}, r.map((c) => el("td", {}, c))))));
}
