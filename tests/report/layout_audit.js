// Layout audit run inside a rendered report (tests/report/test_layout.py): returns what a reader
// would see as a blemish. Pure DOM reads; changes nothing on the page.
(narrow) => {
  const problems = [];
  const describe = (el) => {
    let s = el.tagName.toLowerCase();
    if (el.id) s += "#" + el.id;
    if (el.classList && el.classList.length) s += "." + Array.from(el.classList).join(".");
    const sec = el.closest && el.closest("section[id], header, nav, footer, .card");
    if (sec && sec !== el) s = (sec.id ? "#" + sec.id : sec.tagName.toLowerCase()) + " " + s;
    return s;
  };
  const doc = document.documentElement;
  if (doc.scrollWidth > doc.clientWidth + 1) {
    problems.push({kind: "page-scroll", where: "html", detail: `${doc.scrollWidth} > ${doc.clientWidth}`});
  }
  for (const el of document.body.querySelectorAll("*")) {
    if (el instanceof SVGElement || el.closest("svg")) continue;
    const cw = el.clientWidth;
    if (!cw) continue;
    const style = getComputedStyle(el);
    if (style.display === "none" || style.visibility === "hidden") continue;
    if (el.scrollWidth > cw + 1) {
      problems.push({kind: "overflow", where: describe(el), detail: `${el.scrollWidth} > ${cw}`,
                     text: (el.innerText || "").slice(0, 80)});
    }
  }
  // words broken mid-word (a short word split over two lines: "insufficien/t_data", "RAN/K");
  // long tokens (kernel names, paths) may wrap, and so may text at a hyphen or slash
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  const range = document.createRange();
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const host = node.parentElement;
    if (!host || host.closest("svg, script, style, [hidden]") || !host.getClientRects().length) continue;
    for (const m of node.textContent.matchAll(/[^\s\-\/–—]+/g)) {
      if (m[0].length < 2 || m[0].length > 24) continue;
      range.setStart(node, m.index);
      range.setEnd(node, m.index + m[0].length);
      const rects = Array.from(range.getClientRects()).filter((r) => r.width > 0);
      if (rects.length > 1 && Math.abs(rects[0].top - rects[rects.length - 1].top) > 2) {
        problems.push({kind: "word-broken", where: describe(host), detail: m[0]});
      }
    }
  }
  // tables: every table fits its card (no part of it outside the card's box)
  for (const t of document.querySelectorAll("table")) {
    const card = t.closest(".card, .verdict, section, main");
    if (!card || !t.getClientRects().length) continue;
    const r = t.getBoundingClientRect(), c = card.getBoundingClientRect();
    if (r.right > c.right + 1 || r.left < c.left - 1) {
      problems.push({kind: "table-outside", where: describe(t), detail: `${Math.round(r.right)} > ${Math.round(c.right)}`});
    }
  }
  // chart labels: no two non-empty texts of one chart overlap, none leaves its chart; at narrow
  // widths no label renders smaller than 11 px (a viewBox scaled down shrinks its text)
  document.querySelectorAll("svg.chart").forEach((svg, n) => {
    const box = svg.getBoundingClientRect();
    if (!box.width) return;
    const vb = svg.viewBox && svg.viewBox.baseVal;
    const scale = vb && vb.width ? box.width / vb.width : 1;
    const texts = Array.from(svg.querySelectorAll("text"))
      .filter((t) => t.textContent.trim() && t.getClientRects().length)
      .map((t) => ({t, r: t.getBoundingClientRect(), s: Array.from(t.childNodes).filter((c) => c.nodeType === 3).map((c) => c.textContent).join("").trim()}));
    const where = describe(svg) + `[${n}]`;
    const tol = 0.5;
    for (const a of texts) {
      const px = parseFloat(getComputedStyle(a.t).fontSize) * scale;
      if (narrow && px < 10.95) {
        problems.push({kind: "label-small", where, detail: `${a.s}: ${px.toFixed(1)} px`});
      }
      if (a.r.left < box.left - 1 || a.r.right > box.right + 1 || a.r.top < box.top - 1 || a.r.bottom > box.bottom + 1) {
        problems.push({kind: "label-outside", where, detail: a.s});
      }
    }
    for (let i = 0; i < texts.length; i++) {
      for (let j = i + 1; j < texts.length; j++) {
        const a = texts[i].r, b = texts[j].r;
        const ox = Math.min(a.right, b.right) - Math.max(a.left, b.left);
        const oy = Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top);
        if (ox > tol && oy > tol && texts[i].t.getAttribute("transform") === null
            && texts[j].t.getAttribute("transform") === null) {
          problems.push({kind: "label-overlap", where, detail: `${texts[i].s} / ${texts[j].s}`});
        }
      }
    }
  });
  return problems;
}
