// Turning text and tool calls into HTML for the command center: markdown with highlighted
// code, a tool call's one-line summary, and its input as a diff where it is a file's change.
// Everything shown is escaped first.

export const escape = (s) => s.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c]));
const KEYWORDS = new Set("fn let mut pub use mod struct enum impl trait match if else for while loop return async await const static def class import from as in of function var new this self Self true false null None True False type interface export default package func go defer".split(" "));

function highlight(code) {
  const out = [];
  const re = /(\/\/[^\n]*|#[^\n]*|\/\*[\s\S]*?\*\/)|("(?:\\.|[^"\\])*"|'(?:\\.|[^'\\])*'|`(?:\\.|[^`\\])*`)|(\b\d+(?:\.\d+)?\b)|([A-Za-z_][A-Za-z0-9_]*)|([\s\S])/g;
  let m;
  while ((m = re.exec(code)) !== null) {
    if (m[1]) out.push(`<span class="tok-c">${escape(m[1])}</span>`);
    else if (m[2]) out.push(`<span class="tok-s">${escape(m[2])}</span>`);
    else if (m[3]) out.push(`<span class="tok-n">${m[3]}</span>`);
    else if (m[4]) out.push(KEYWORDS.has(m[4]) ? `<span class="tok-k">${m[4]}</span>` : m[4]);
    else out.push(escape(m[5]));
  }
  return out.join("");
}

function inline(text) {
  return escape(text)
    .replace(/`([^`]+)`/g, "<code>$1</code>")
    .replace(/\*\*([^*]+)\*\*/g, "<strong>$1</strong>")
    .replace(/(^|[^*])\*([^*\s][^*]*)\*/g, "$1<em>$2</em>")
    .replace(/\[([^\]]+)\]\((https?:\/\/[^)\s]+)\)/g, '<a href="$2" rel="noreferrer noopener" target="_blank">$1</a>');
}

export function markdown(text) {
  const html = [];
  const lines = text.split("\n");
  let list = null;
  const closeList = () => { if (list) { html.push(`</${list}>`); list = null; } };
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    const fence = line.match(/^```\s*([\w+-]*)/);
    if (fence) {
      closeList();
      const code = [];
      for (i++; i < lines.length && !lines[i].startsWith("```"); i++) code.push(lines[i]);
      html.push(`<pre><code>${highlight(code.join("\n"))}</code></pre>`);
      continue;
    }
    const heading = line.match(/^(#{1,4})\s+(.*)/);
    const bullet = line.match(/^\s*[-*]\s+(.*)/);
    const numbered = line.match(/^\s*\d+[.)]\s+(.*)/);
    if (heading) { closeList(); html.push(`<h${heading[1].length + 2}>${inline(heading[2])}</h${heading[1].length + 2}>`); }
    else if (bullet || numbered) {
      const kind = bullet ? "ul" : "ol";
      if (list !== kind) { closeList(); html.push(`<${kind}>`); list = kind; }
      html.push(`<li>${inline((bullet || numbered)[1])}</li>`);
    } else if (line.trim() === "") { closeList(); }
    else { closeList(); html.push(`<p>${inline(line)}</p>`); }
  }
  closeList();
  return html.join("");
}

export function summary(name, input) {
  const pick = input.command || input.file_path || input.pattern || input.path || input.description || JSON.stringify(input);
  return String(pick).split("\n")[0].slice(0, 160);
}

export function diffOf(name, input) {
  if (name === "Edit" && typeof input.old_string === "string") {
    const del = input.old_string.split("\n").map((l) => `<span class="diff-del">- ${escape(l)}</span>`);
    const add = (input.new_string || "").split("\n").map((l) => `<span class="diff-add">+ ${escape(l)}</span>`);
    return `${escape(input.file_path || "")}\n${del.concat(add).join("\n")}`;
  }
  if (name === "Write" && typeof input.content === "string") {
    return `${escape(input.file_path || "")}\n${input.content.split("\n").map((l) => `<span class="diff-add">+ ${escape(l)}</span>`).join("\n")}`;
  }
  return escape(JSON.stringify(input, null, 2));
}
