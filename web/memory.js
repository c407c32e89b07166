// The Memory view: the knowledge graph around a node (or what a query recalls, or the newest
// memories), drawn as SVG. The first node sits in the middle, the rest on a ring around it;
// clicking a node centres the view on it and shows its details.

const SVG = "http://www.w3.org/2000/svg";
const SIZE = 320;

function el(name, attrs = {}, text) {
  const node = document.createElementNS(SVG, name);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
  if (text !== undefined) node.textContent = text;
  return node;
}

function short(text, max) {
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

function detail(node) {
  const box = document.getElementById("memory-detail");
  box.textContent = "";
  if (!node) return;
  const title = document.createElement("strong");
  title.textContent = `${node.type} · ${node.name}`;
  const body = document.createElement("div");
  body.textContent = node.description || "";
  const meta = document.createElement("div");
  meta.textContent = `[${node.id}] learned ${node.age} from ${node.origin.replace("_", " ")}`;
  box.append(title, body, meta);
}

export function showMemory(view, centre) {
  const graph = document.getElementById("memory-graph");
  const note = document.getElementById("memory-note");
  graph.textContent = "";
  detail(null);
  if (!view.trusted) { note.textContent = view.text; return; }
  if (!view.nodes.length) { note.textContent = "Nothing in memory matches."; return; }
  note.textContent = `${view.nodes.length} memories, ${view.edges.length} relations`;
  const svg = el("svg", { viewBox: `0 0 ${SIZE} ${SIZE}`, role: "img", "aria-label": "Memory graph" });
  const mid = SIZE / 2;
  const ring = SIZE / 2 - 40;
  const at = new Map();
  view.nodes.forEach((n, i) => {
    if (i === 0) { at.set(n.id, [mid, mid]); return; }
    const angle = (2 * Math.PI * (i - 1)) / (view.nodes.length - 1) - Math.PI / 2;
    at.set(n.id, [mid + ring * Math.cos(angle), mid + ring * Math.sin(angle)]);
  });
  for (const e of view.edges) {
    const [a, b] = [at.get(e.source), at.get(e.target)];
    if (!a || !b) continue;
    const line = el("line", { x1: a[0], y1: a[1], x2: b[0], y2: b[1] });
    line.append(el("title", {}, `${e.source} ${e.type} ${e.target}`));
    svg.append(line, el("text", { x: (a[0] + b[0]) / 2, y: (a[1] + b[1]) / 2, class: "edge-label" }, e.type));
  }
  view.nodes.forEach((n, i) => {
    const [x, y] = at.get(n.id);
    const g = el("g", { class: `node ${n.origin}${i === 0 ? " center" : ""}`, tabindex: 0, "data-id": n.id });
    g.append(el("circle", { cx: x, cy: y, r: i === 0 ? 12 : 8 }));
    g.append(el("text", { x: x + 11, y: y + 4 }, short(n.name, 22)));
    g.append(el("title", {}, `${n.type}: ${n.name}`));
    g.addEventListener("click", () => (i === 0 ? detail(n) : centre(n.id)));
    g.addEventListener("keydown", (k) => { if (k.key === "Enter") centre(n.id); });
    svg.append(g);
  });
  graph.append(svg);
  detail(view.nodes[0]);
}
