// Layout audit run inside a rendered report (tests/report/test_layout.py): returns what a reader
// would see as a blemish. Pure DOM reads; changes nothing on the page.
(allowScrollWrappers) => {
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
      const wrapper = el.classList.contains("table-scroll");
      if (wrapper && allowScrollWrappers) continue;
      problems.push({kind: "overflow", where: describe(el), detail: `${el.scrollWidth} > ${cw}`,
                     text: (el.innerText || "").slice(0, 80)});
    }
  }
  // chart labels: no two non-empty texts of one chart overlap, none leaves its chart
  document.querySelectorAll("svg.chart").forEach((svg, n) => {
    const box = svg.getBoundingClientRect();
    if (!box.width) return;
    const texts = Array.from(svg.querySelectorAll("text"))
      .filter((t) => t.textContent.trim() && t.getClientRects().length)
      .map((t) => ({t, r: t.getBoundingClientRect(), s: Array.from(t.childNodes).filter((c) => c.nodeType === 3).map((c) => c.textContent).join("").trim()}));
    const where = describe(svg) + `[${n}]`;
    const tol = 0.5;
    for (const a of texts) {
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
