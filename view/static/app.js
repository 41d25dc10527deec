// sysmo view: filters apply on change; pick two attempts of one task to compare them; running experiments
// refresh from /progress.json; a page of a running experiment (main[data-live]) follows the run: it asks
// live.json every LIVE_MS and, when the stores changed, loads itself again and swaps its content in.
// No framework, no network beyond this app.
const LIVE_MS = 2000;
let progressPolling = false;

const followRun = () => {
  const main = document.querySelector("main[data-live]");
  if (!main) return;
  const poll = async () => {
    let state;
    try {
      const response = await fetch(main.dataset.live, { cache: "no-store" });
      if (!response.ok) return;  // the experiment is gone: stop
      state = await response.json();
    } catch (err) {
      return;  // the server stopped: keep the page as it is (no console noise)
    }
    if (state.stamp !== main.dataset.stamp) {
      try {
        const response = await fetch(window.location.href, { cache: "no-store" });
        if (response.ok) {
          const fresh = new DOMParser().parseFromString(await response.text(), "text/html").querySelector("main");
          if (fresh) {
            const open = new Set([...main.querySelectorAll("details[id][open]")].map((d) => d.id));
            main.innerHTML = fresh.innerHTML;
            for (const d of main.querySelectorAll("details[id]")) if (open.has(d.id)) d.open = true;
            main.dataset.stamp = fresh.dataset.stamp || state.stamp;
            init(main);
          }
        }
      } catch (err) {
        return;
      }
    }
    if (state.status === "running") setTimeout(poll, LIVE_MS);
    else { const note = document.getElementById("live-note"); if (note) note.textContent = `run ${state.status}`; }
  };
  setTimeout(poll, LIVE_MS);
};

document.addEventListener("DOMContentLoaded", () => { init(document); followRun(); });

function init(root) {
  for (const el of root.querySelectorAll("[data-autosubmit]")) {
    el.addEventListener("change", () => {
      const form = el.form;
      for (const field of form.elements) {  // keep the URL short: drop empty filters
        if (field.name && !field.value && (field.tagName === "SELECT" || field.type === "search")) field.disabled = true;
      }
      form.submit();
    });
  }
  const filters = document.getElementById("filters");
  if (filters) {
    filters.addEventListener("submit", () => {
      for (const field of filters.elements) {
        if (field.name && !field.value && (field.tagName === "SELECT" || field.type === "search")) field.disabled = true;
      }
    });
  }

  for (const toggle of root.querySelectorAll("button.toggle-columns")) {
    toggle.addEventListener("click", () => {  // a leaderboard's secondary columns (pass@k, sub-metrics) on request
      const table = document.getElementById(toggle.dataset.table);
      const compact = table.classList.toggle("compact");
      toggle.setAttribute("aria-pressed", String(!compact));
    });
  }

  // a row of the attempt table opens its attempt: a click anywhere but its checkbox or links, or Enter on the row
  for (const row of root.querySelectorAll("tr[data-href]")) {
    row.addEventListener("click", (event) => {
      if (event.target.closest("a, input, button, label, select")) return;
      if (window.getSelection && String(window.getSelection()).length) return;  // selecting text is not a click
      window.location.href = row.dataset.href;
    });
    row.addEventListener("keydown", (event) => {
      if (event.key === "Enter" && event.target === row) window.location.href = row.dataset.href;
    });
  }

  // copy buttons (fork commands, checkpoint ids): the text goes to the clipboard, the button says so
  for (const button of root.querySelectorAll("button[data-copy]")) {
    button.addEventListener("click", async () => {
      const text = button.dataset.copy;
      try {
        await navigator.clipboard.writeText(text);
      } catch (err) {  // no clipboard (plain http on another host): select a text field holding it instead
        const field = document.createElement("textarea");
        field.value = text; document.body.appendChild(field); field.select();
        try { document.execCommand("copy"); } catch (e) { /* the text stays selected for the user */ }
        field.remove();
      }
      const label = button.textContent;
      button.textContent = "copied";
      setTimeout(() => { button.textContent = label; }, 1500);
    });
  }

  // a link to a folded record (a model call, a step's state) unfolds it
  const unfold = () => {
    const target = window.location.hash && document.getElementById(decodeURIComponent(window.location.hash.slice(1)));
    if (target && target.tagName === "DETAILS") target.open = true;
  };
  if (root === document) window.addEventListener("hashchange", unfold);
  unfold();

  const picks = [...root.querySelectorAll("input.pick")];
  const button = document.getElementById("compare-button");
  const why = document.getElementById("compare-why");
  const update = () => {
    if (!button) return;
    const chosen = picks.filter((p) => p.checked);
    const sameTask = chosen.length === 2 && chosen[0].dataset.task === chosen[1].dataset.task;
    button.disabled = !sameTask;
    if (why) {
      why.textContent = chosen.length < 2 ? `pick ${2 - chosen.length} more attempt(s) of one task`
        : sameTask ? `${chosen[0].dataset.task}: rounds aligned, final models diffed`
        : `not comparable: ${chosen[0].dataset.task} and ${chosen[1].dataset.task} are different tasks`;
    }
    document.getElementById("compare-a").value = chosen[0] ? chosen[0].value : "";
    document.getElementById("compare-b").value = chosen[1] ? chosen[1].value : "";
  };
  for (const p of picks) {
    p.addEventListener("change", () => {
      const chosen = picks.filter((q) => q.checked);
      if (chosen.length > 2) chosen.filter((q) => q !== p)[0].checked = false;  // keep the last two
      update();
    });
  }
  update();

  const table = document.querySelector("table[data-progress]");
  if (table && !progressPolling) {
    progressPolling = true;
    const money = (v) => `$${Number(v).toFixed(4)}`;
    const refresh = async () => {
      const running = [...table.querySelectorAll("tr[data-experiment]")].filter(
        (row) => row.querySelector('[data-field="status"]').textContent.trim() === "running");
      if (!running.length) return;
      try {
        const response = await fetch(table.dataset.progress, { cache: "no-store" });
        if (!response.ok) return;
        const data = await response.json();
        for (const row of running) {
          const p = data[row.dataset.experiment];
          if (!p) continue;
          const set = (field, text) => { const el = row.querySelector(`[data-field="${field}"]`); if (el) el.textContent = text; };
          set("status", p.status);
          set("done", p.planned ? `${p.attempts} / ${p.planned}` : `${p.attempts}`);
          set("forks", p.forks ? ` · ${p.forks} fork${p.forks > 1 ? "s" : ""}` : "");
          set("passed", p.passed); set("failed", p.failed); set("errors", p.errors);
          set("pass_rate", p.pass_rate === null ? "—" : `${Math.round(100 * p.pass_rate)}%`);
          for (const el of row.querySelectorAll("[data-arm-rate]")) {  // several arms: each arm's own rate
            const rate = (p.arm_pass_rates || {})[el.dataset.armRate];
            if (rate !== undefined) el.textContent = `${Math.round(100 * rate)}%`;
          }
          set("cost_usd", money(p.cost_usd));
        }
      } catch (err) {
        // the server stopped: keep the last figures (no console noise)
      }
      setTimeout(refresh, 3000);
    };
    setTimeout(refresh, 3000);
  }
}
