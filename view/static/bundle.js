// sysmo view --bundle: the attempt table of a static copy. The page holds every row; its query parameters (the
// server's: agent, model, kind, task, arm, status, failed_stage, error_kind, q, sort, desc) filter, search and sort
// them here, from rows.js (window.SYSMO_BUNDLE). The compare button opens the pair's pre-rendered page.
document.addEventListener("DOMContentLoaded", () => {
  const bundle = window.SYSMO_BUNDLE;
  const table = document.getElementById("attempts");
  if (!bundle || !table) return;
  const params = new URLSearchParams(location.search);
  const fields = { agent: "agent", model: "model", kind: "kind", task: "task_id", arm: "arm", status: "status",
    failed_stage: "failed_stage", error_kind: "error_kind" };
  const sort = params.get("sort") || "task_id";
  const desc = ["1", "true"].includes(params.get("desc"));
  const q = (params.get("q") || "").trim().toLowerCase();

  const form = document.getElementById("filters");
  if (form) {  // the controls show the view's parameters
    for (const name of Object.keys(fields)) {
      const el = form.elements[name];
      if (el && params.get(name)) {
        if (![...el.options].some((o) => o.value === params.get(name))) el.add(new Option(params.get(name), params.get(name)));
        el.value = params.get(name);
      }
    }
    if (form.elements.sort) form.elements.sort.value = sort;
    if (form.elements.desc) form.elements.desc.checked = desc;
    const search = form.elements.q;
    if (search) {
      search.value = params.get("q") || "";
      search.placeholder = "task, agent, model, status, id, error…";
      search.title = "in this static copy the search matches the task, agent, model, status, attempt id and error "
        + "(sysmo view also searches prompts, replies and diagnostics)";
    }
  }

  const body = table.tBodies[0];
  const lines = [...body.rows].map((tr) => {
    const link = tr.querySelector("a.attempt-link");
    const id = link ? link.textContent.trim() : "";
    return { tr, id, row: bundle.rows[id] };
  }).filter((l) => l.row);
  const keep = (l) => {
    for (const [name, key] of Object.entries(fields)) {
      const want = params.get(name);
      if (want && String(l.row[key] ?? "") !== want) return false;
    }
    if (!q) return true;
    const r = l.row;
    return [l.id, r.task_id, r.agent, r.model, r.status, r.arm, r.error].join("\n").toLowerCase().includes(q);
  };
  const cmp = (x, y) => (x < y ? -1 : x > y ? 1 : 0);
  const tie = (a, b) => cmp(a.row.task_id, b.row.task_id) || cmp(a.row.agent, b.row.agent)
    || cmp(a.row.model, b.row.model) || a.row.sample_index - b.row.sample_index;
  const shown = lines.filter(keep);
  let ordered;
  if (sort.startsWith("score:")) {  // as the server: a stage not scored sorts last either way
    const stage = sort.slice("score:".length);
    const value = (l) => (l.row.scores || {})[stage];
    const scored = shown.filter((l) => value(l) !== undefined && value(l) !== null);
    scored.sort((a, b) => (value(a) - value(b) || tie(a, b)) * (desc ? -1 : 1));
    ordered = scored.concat(shown.filter((l) => !scored.includes(l)));
  } else {
    const key = lines.length && sort in lines[0].row ? sort : "task_id";
    shown.sort((a, b) => (cmp(a.row[key], b.row[key]) || tie(a, b)) * (desc ? -1 : 1));
    ordered = shown;
  }
  for (const l of lines) l.tr.hidden = true;
  for (const l of ordered) { l.tr.hidden = false; body.appendChild(l.tr); }
  const count = document.getElementById("shown-count");
  if (count) count.textContent = `${ordered.length} of ${lines.length}`;
  const csv = document.getElementById("csv-link");
  if (csv) csv.textContent = `CSV of all ${lines.length}`;

  for (const a of table.tHead.querySelectorAll("a[href^='?']")) {  // sort links keep the filters of this view
    const col = new URLSearchParams(a.getAttribute("href").slice(1)).get("sort") || "task_id";
    const next = new URLSearchParams(params);
    next.set("sort", col);
    if (col === sort ? !desc : col.startsWith("score:")) next.set("desc", "1"); else next.delete("desc");
    a.setAttribute("href", `?${next}`);
    a.textContent = a.textContent.replace(/ [▲▼]$/, "") + (col === sort ? (desc ? " ▼" : " ▲") : "");
  }

  const compare = document.getElementById("compare-form");
  if (compare) {
    compare.addEventListener("submit", (event) => {
      event.preventDefault();
      const a = document.getElementById("compare-a").value, b = document.getElementById("compare-b").value;
      const pair = [`${a}--${b}`, `${b}--${a}`].find((p) => bundle.compare.includes(p));
      if (pair) location.href = `compare/${pair}.html`;
      else document.getElementById("compare-why").textContent = "this pair's comparison is not in this static copy";
    });
  }
});
