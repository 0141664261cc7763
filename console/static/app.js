// The console page: the live view, the list of runs, and a run's steps.
// Everything the record holds (task, messages, summaries) is text written by
// a model or a page on the desktop: it only ever goes into textContent.
'use strict';

const $ = (sel) => document.querySelector(sel);
const SVG = 'http://www.w3.org/2000/svg';

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

function svg(tag, attrs) {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  return e;
}

// Every address is relative to the page's: the console lives under a
// random path prefix, its cookie's Path (takeover.js uses wsURL too).
function wsURL(path) {
  const u = new URL(path, location.href);
  u.protocol = 'ws:';
  return u.href;
}

function secs(s) {
  if (!s) return '0 ms';
  return s < 1 ? Math.round(s * 1000) + ' ms' : s.toFixed(2) + ' s';
}

function tokens(u) {
  if (!u) return 'no usage';
  let t = `${u.input_tokens} in, ${u.output_tokens} out, ${u.total_tokens} total`;
  if (u.incomplete) t += ' (a response carried no usage)';
  return t;
}

// ---- live view ----------------------------------------------------------

function startLive() {
  const canvas = $('#live');
  if (!canvas) return;
  const status = $('#live-status');
  const g = canvas.getContext('2d');
  let frames = 0;
  let painting = Promise.resolve();
  const ws = new WebSocket(wsURL('live'));
  ws.binaryType = 'blob';
  ws.onopen = () => { status.textContent = 'live'; };
  ws.onmessage = (ev) => {
    // Frames are painted in the order they came.
    painting = painting.then(async () => {
      const bmp = await createImageBitmap(ev.data);
      if (canvas.width !== bmp.width || canvas.height !== bmp.height) {
        canvas.width = bmp.width;
        canvas.height = bmp.height;
      }
      g.drawImage(bmp, 0, 0);
      bmp.close();
      // drawnAt is when the canvas holds the frame (the screen shows it
      // at the next display refresh): the live view's latency is read here.
      frames++;
      canvas.dataset.frames = String(frames);
      canvas.dataset.drawnAt = String(performance.timeOrigin + performance.now());
      status.textContent = `live · frame ${frames} at ${new Date().toLocaleTimeString()}`;
    }).catch((err) => { status.textContent = 'a frame could not be shown: ' + err; });
  };
  ws.onclose = () => {
    if (document.body.dataset.ended) {
      status.textContent = 'the run has ended: the live view is closed';
      return;
    }
    status.textContent = 'live view ended; trying again…';
    setTimeout(startLive, 2000);
  };
}

// ---- the run's end --------------------------------------------------------

// showEnded says how the console's run ended; from then on nothing is
// retried (the console closes once the page has read the end).
function showEnded(o) {
  if (document.body.dataset.ended) return;
  document.body.dataset.ended = o.status;
  const title = { done: 'The run finished: done', failed: 'The run failed', stopped: 'The run was stopped' }[o.status] || 'The run ended';
  $('#ended-title').textContent = title;
  $('#ended-title').className = o.status === 'done' ? 'ok' : 'bad';
  $('#ended-text').replaceChildren(el('div', o.status === 'done' ? 'final' : 'error', o.status === 'done' ? (o.message || '') : (o.error || '')),
    el('p', 'muted', 'The console closes now: the live view and take over end with the run. Past runs stay in their records (agentctl console).'));
  $('#ended').hidden = false;
  $('#questions').hidden = true;
  document.dispatchEvent(new CustomEvent('run-ended'));
  // The record is complete now: show it, then tell the console this page
  // has what it needs (it closes once the open pages have).
  clearTimeout(refresh);
  route().finally(() => fetch('api/questions?ended=1&page=' + pageID, { credentials: 'same-origin' }).catch(() => {}));
}

// ---- runs ---------------------------------------------------------------

async function getJSON(url) {
  const r = await fetch(url, { credentials: 'same-origin' });
  if (!r.ok) throw new Error(`${url}: ${r.status} ${await r.text()}`);
  return r.json();
}

async function showRuns() {
  const data = await getJSON('api/runs');
  const body = $('#runs tbody');
  body.replaceChildren();
  for (const run of data.runs) {
    const outcome = !run.ended ? 'running (or stopped without an end)' : run.ok ? 'done' : 'failed';
    const tr = listRow('#/runs/' + encodeURIComponent(run.id), new Date(run.start).toLocaleString(),
      el('td', '', run.task), el('td', '', String(run.steps)),
      el('td', !run.ended ? '' : run.ok ? 'ok' : 'bad', outcome));
    tr.dataset.run = run.id;
    body.append(tr);
  }
  if (data.runs.length === 0) body.append(emptyRow(4, 'No runs yet.'));
}

// listRow is a row of the list of runs or of evaluations: a link to the
// item's page, then its other cells.
function listRow(href, linkText, ...cells) {
  const a = el('a', '', linkText);
  a.href = href;
  const td = el('td');
  td.append(a);
  const tr = el('tr');
  tr.append(td, ...cells);
  return tr;
}

// emptyRow is a list's one row when it is empty: text across its cols
// columns.
function emptyRow(cols, text) {
  const td = el('td', 'muted', text);
  td.colSpan = cols;
  const tr = el('tr');
  tr.append(td);
  return tr;
}

let replay = { run: null, pos: -1 }; // pos -1: every step
let refresh = null;

// showRun shows the run record served at api (api/runs/ID, or a trial's of
// an evaluation: api/evals/EVAL/TASK/TRIAL); from is the page it was
// reached from, linked above it.
async function showRun(api, from) {
  const hash = location.hash;
  const run = await getJSON(api);
  run.api = api;
  if (replay.run === null || replay.run.api !== api) replay.pos = -1;
  replay.run = run;
  const back = $('#run-from');
  back.hidden = !from;
  if (from) {
    const a = el('a', '', from.text);
    a.href = from.href;
    back.replaceChildren(a);
  }
  $('#run-title').textContent = run.task || run.id;
  const facts = $('#run-facts');
  facts.replaceChildren();
  const fact = (k, v) => facts.append(el('dt', '', k), el('dd', '', v));
  fact('Run', run.id);
  fact('Model', run.model || '—');
  fact('Started', run.start ? new Date(run.start).toLocaleString() : '—');
  fact('Steps', `${run.steps}${run.max_steps ? ' of at most ' + run.max_steps : ''}`);
  fact('Tokens', tokens(run.usage));
  if (run.duration_s) fact('Time', secs(run.duration_s));
  fact('Record format', 'version ' + run.version);
  const end = $('#run-end');
  end.replaceChildren();
  if (run.ended && run.ok) {
    end.append(el('h3', '', 'Final message'), el('div', 'final', run.final_message));
  } else if (run.ended) {
    const box = el('div', 'error', run.error);
    end.append(el('h3', 'bad', 'The run failed'), box,
      el('p', '', 'Attempted calls: ' + ((run.attempted_call_ids || []).join(', ') || 'none')),
      el('p', '', 'Completed calls: ' + ((run.completed_call_ids || []).join(', ') || 'none')));
  } else {
    end.append(el('p', 'muted', 'In progress: this page follows the record as it is written.'));
  }
  drawSteps();
  clearTimeout(refresh);
  if (!run.ended && location.hash === hash) {
    refresh = setTimeout(() => showRun(api, from).catch(showError), 1000);
  }
}

function drawSteps() {
  const run = replay.run;
  const list = $('#steps');
  list.replaceChildren();
  const steps = run.step_list;
  const shown = replay.pos < 0 ? steps : steps.slice(replay.pos, replay.pos + 1);
  for (const st of shown) list.append(stepItem(run, st));
  $('#replay-pos').textContent = replay.pos < 0 ? `all ${steps.length} steps` : `step ${replay.pos + 1} of ${steps.length}`;
  $('#prev').disabled = replay.pos === 0 || steps.length === 0;
  $('#next').disabled = replay.pos === steps.length - 1 || steps.length === 0;
}

function stepItem(run, st) {
  const li = el('li', 'step');
  li.dataset.step = String(st.n);
  li.append(el('h3', '', `Step ${st.n}`));
  const left = el('div');
  // The actions are drawn on the screenshot the model chose them from;
  // a step without actions shows the screenshot it took.
  const shot = st.actions && st.actions.length && st.shown ? st.shown
    : (st.screenshots && st.screenshots.length ? st.screenshots[st.screenshots.length - 1] : st.shown);
  if (shot && shot.file) {
    const box = el('div', 'shot');
    const img = el('img');
    img.alt = `screenshot ${shot.file}`;
    img.src = `${run.api}/${encodeURIComponent(shot.file)}`;
    box.append(img);
    if (shot === st.shown && st.actions) box.append(marks(shot, st.actions));
    left.append(box, el('p', 'muted', `${shot.file}, ${shot.width}×${shot.height}`));
  }
  const right = el('div');
  const ul = el('ul', 'facts');
  ul.append(el('li', '', `answer in ${secs(st.response_s)}, tokens ${tokens(st.usage)}`));
  if (st.call_ids && st.call_ids.length) ul.append(el('li', '', 'calls ' + st.call_ids.join(', ')));
  for (const a of st.actions || []) {
    const item = el('li', a.error ? 'bad' : '', `${a.summary} — ${secs(a.duration_s)}`);
    if (a.error) item.append(el('div', 'error', a.error));
    item.className += ' action';
    ul.append(item);
  }
  for (const s of st.screenshots || []) ul.append(el('li', '', `screenshot ${s.width}×${s.height}, ${Math.ceil(s.bytes / 1024)} KB — ${secs(s.duration_s)}`));
  if (st.codes) ul.append(el('li', '', `${st.codes} code call(s)`));
  right.append(ul);
  for (const ap of st.approvals || []) {
    const box = el('div', 'approval');
    box.dataset.kind = ap.kind;
    const what = ap.kind.replaceAll('_', ' ') + (ap.summary ? ': ' + ap.summary : '') +
      (ap.checks && ap.checks.length ? ': ' + ap.checks.join(', ') : '');
    box.append(el('div', '', what));
    const verdict = !ap.answered ? 'waiting for an answer'
      : (ap.approved ? 'approved' : 'refused') + (ap.reason ? ` (${ap.reason})` : '') + (ap.by ? ' by ' + ap.by : '');
    box.append(el('div', ap.answered ? (ap.approved ? 'ok' : 'bad') : 'muted', verdict));
    right.append(box);
  }
  for (const tk of st.takeovers || []) right.append(takeoverItem(tk));
  if (st.final) right.append(el('div', 'final', st.final));
  li.append(left, right);
  return li;
}

// takeoverItem shows a person's take over: what of the call did not run,
// and once handed back who did what (typed text by its length only).
function takeoverItem(tk) {
  const box = el('div', 'approval takeover');
  box.append(el('div', '', `taken over by a person during call ${tk.call_id}` +
    ((tk.not_run || []).length ? '; did not run: ' + tk.not_run.join(', ') : '')));
  if (!tk.handed_back) {
    box.append(el('div', 'muted', 'not handed back'));
    return box;
  }
  const n = (tk.actions || []).length + (tk.more || 0);
  box.append(el('div', '', `handed back by ${(tk.by || []).join(', ')} after ${n} action(s)` +
    (n ? ': ' + tk.actions.join(', ') + (tk.more ? ` and ${tk.more} more` : '') : '') +
    (tk.orphaned ? ' (their page went away while holding it)' : '')));
  for (const note of tk.notes || []) box.append(el('div', 'final', note));
  return box;
}

// marks draws a step's actions over its screenshot, in its image space.
function marks(shot, acts) {
  const s = svg('svg', { viewBox: `0 0 ${shot.width} ${shot.height}`, preserveAspectRatio: 'none' });
  const labels = [];
  acts.forEach((a, i) => {
    if (!a.mark) return;
    // Zero fields are left out of the JSON.
    const m = Object.assign({ x: 0, y: 0, x2: 0, y2: 0, dx: 0, dy: 0, button: 'left' }, a.mark);
    const n = String(i + 1);
    const g = svg('g', { class: 'mark-' + m.kind, 'data-i': String(i) });
    const num = (x, y) => { const t = svg('text', { x: x + 14, y: y - 10, class: 'mark-text' }); t.textContent = n; return t; };
    switch (m.kind) {
      case 'click':
        {
          // The button is always named: a right click is not a left one.
          const t = svg('text', { x: m.x + 14, y: m.y + 24, class: 'mark-text mark-button' });
          t.textContent = m.button;
          g.append(svg('circle', { cx: m.x, cy: m.y, r: 14, class: 'mark' }),
            svg('circle', { cx: m.x, cy: m.y, r: 3, class: 'mark-fill' }), num(m.x, m.y), t);
        }
        break;
      case 'double_click':
        g.append(svg('circle', { cx: m.x, cy: m.y, r: 14, class: 'mark' }),
          svg('circle', { cx: m.x, cy: m.y, r: 20, class: 'mark' }), num(m.x, m.y));
        break;
      case 'move':
        g.append(svg('path', { d: `M${m.x - 10} ${m.y}h20M${m.x} ${m.y - 10}v20`, class: 'mark' }), num(m.x, m.y));
        break;
      case 'drag': {
        // Through every point of the path the record holds (records
        // before version 2 hold the first and the last only).
        const pts = m.path && m.path.length >= 2 ? m.path : [{ x: m.x, y: m.y }, { x: m.x2, y: m.y2 }];
        g.append(svg('circle', { cx: m.x, cy: m.y, r: 6, class: 'mark-fill' }),
          svg('polyline', { points: pts.map((p) => `${p.x || 0},${p.y || 0}`).join(' '), class: 'mark' }),
          svg('circle', { cx: m.x2, cy: m.y2, r: 12, class: 'mark' }), num(m.x, m.y));
        break;
      }
      case 'scroll': {
        const len = Math.hypot(m.dx, m.dy) || 1;
        const ex = m.x + (m.dx / len) * 48, ey = m.y + (m.dy / len) * 48;
        // An arrow in the direction the content scrolls by, with its head.
        const ux = m.dx / len, uy = m.dy / len;
        const head = [[ex + ux * 14, ey + uy * 14], [ex - uy * 9, ey + ux * 9], [ex + uy * 9, ey - ux * 9]];
        // Left of the point: a click there names its button on the right.
        const t = svg('text', { x: m.x - 14, y: m.y + 24, 'text-anchor': 'end', class: 'mark-text' });
        t.textContent = `by ${m.dx},${m.dy}`;
        g.append(svg('circle', { cx: m.x, cy: m.y, r: 5, class: 'mark-fill' }),
          svg('line', { x1: m.x, y1: m.y, x2: ex, y2: ey, class: 'mark' }),
          svg('polygon', { points: head.map((p) => p.join(',')).join(' '), class: 'mark-fill' }), num(m.x, m.y), t);
        break;
      }
      default:
        labels.push(`${n}. ${m.label}`);
        return;
    }
    s.append(g);
  });
  labels.forEach((l, i) => {
    const t = svg('text', { x: 12, y: 30 + i * 26, class: 'mark-text mark-label' });
    t.textContent = l;
    s.append(t);
  });
  return s;
}

// ---- evaluations --------------------------------------------------------

async function showEvals() {
  const data = await getJSON('api/evals');
  const body = $('#evals tbody');
  body.replaceChildren();
  for (const ev of data.evals) {
    const total = ev.tasks * ev.trials;
    const tr = listRow('#/evals/' + encodeURIComponent(ev.id), `${new Date(ev.started).toLocaleString()} (${ev.id})`,
      el('td', '', ev.suite), el('td', '', ev.model), el('td', '', `${ev.done}/${total}`),
      el('td', ev.done === 0 ? '' : ev.passed === ev.done ? 'ok' : 'bad', `${ev.passed}/${ev.done}`));
    tr.dataset.eval = ev.id;
    body.append(tr);
  }
  if (data.evals.length === 0) {
    body.append(emptyRow(5, 'No evaluations here (agentctl console --evals DIR: the folder holding agentctl eval\'s output folders).'));
  }
}

// trialHash is the page of a trial's run: its steps replayed.
function trialHash(ev, task, trial) {
  return `#/evals/${encodeURIComponent(ev)}/${encodeURIComponent(task)}/${trial}`;
}

// showEval draws an evaluation as a table of tasks × trials: each cell
// links to its trial's run and lists each checker's verdict and what it
// read from the guest. While trials are left it follows results.jsonl.
async function showEval(id) {
  const hash = location.hash;
  const ev = await getJSON('api/evals/' + encodeURIComponent(id));
  $('#eval-title').textContent = `Evaluation ${ev.id}`;
  const facts = $('#eval-facts');
  facts.replaceChildren();
  const fact = (k, v) => facts.append(el('dt', '', k), el('dd', '', v));
  const total = ev.tasks * ev.trials;
  fact('Suite', ev.suite || '—');
  fact('Model', ev.model || '—');
  fact('Guests', ev.guest || '—');
  fact('Trials done', `${ev.done} of ${total}`);
  fact('Passed', `${ev.passed} of ${ev.done}`);
  const byCell = new Map(ev.results.map((r) => [`${r.task}\u0000${r.trial}`, r]));
  const head = el('tr');
  head.append(el('th', '', 'Task'));
  for (let k = 1; k <= ev.trials; k++) head.append(el('th', '', `Trial ${k}`));
  head.append(el('th', '', 'Passed'));
  $('#eval-table thead').replaceChildren(head);
  const body = $('#eval-table tbody');
  body.replaceChildren();
  for (const task of ev.task_list) {
    const tr = el('tr');
    tr.dataset.task = task.id;
    const name = el('td');
    name.append(el('div', '', task.id), el('div', 'muted', task.mode));
    name.title = task.instruction;
    tr.append(name);
    let passed = 0, done = 0;
    for (let k = 1; k <= ev.trials; k++) {
      const r = byCell.get(`${task.id}\u0000${k}`);
      const td = el('td', 'trial');
      td.dataset.trial = String(k);
      if (!r) {
        td.dataset.state = 'none';
        td.append(el('span', 'muted', 'no result yet'));
        tr.append(td);
        continue;
      }
      done++;
      if (r.pass) passed++;
      td.dataset.state = r.pass ? 'pass' : 'fail';
      const verdict = `${r.pass ? 'pass' : 'FAIL'} · ${r.steps} steps · ${secs(r.seconds)}`;
      if (r.record) {
        const a = el('a', r.pass ? 'ok' : 'bad', verdict);
        a.href = trialHash(ev.id, task.id, k);
        td.append(a);
      } else {
        td.append(el('span', r.pass ? 'ok' : 'bad', verdict + ' (no run record)'));
      }
      if (r.error) td.append(el('div', 'error', r.error));
      const ul = el('ul', 'verdicts');
      for (const v of r.verdicts || []) {
        const li = el('li', v.pass ? 'ok' : 'bad', `${v.pass ? '✓' : '✗'} ${v.checker}`);
        li.dataset.pass = String(v.pass);
        if (v.why) li.append(el('div', 'bad', v.why));
        if (v.read) li.append(el('div', 'read', 'read: ' + v.read));
        ul.append(li);
      }
      td.append(ul);
      tr.append(td);
    }
    tr.append(el('td', done === 0 ? 'muted' : passed === done ? 'ok' : 'bad', `${passed}/${done}`));
    body.append(tr);
  }
  clearTimeout(refresh);
  if (ev.done < total && location.hash === hash) {
    refresh = setTimeout(() => showEval(id).catch(showError), 2000);
  }
}

// ---- questions ----------------------------------------------------------

// Questions the run waits for, each with the call's actions drawn on the
// screenshot they refer to. Only a click answers one; closing the page
// answers nothing, and the run keeps waiting (or times out). A question
// answered elsewhere (the terminal) or withdrawn leaves the list and the
// page says so.
const shownQuestions = new Map(); // id → call id, of questions this page showed
// pageID names this page to the console, which waits for the open pages
// to read the run's end before it closes.
const pageID = [...crypto.getRandomValues(new Uint8Array(8))].map((b) => b.toString(16).padStart(2, '0')).join('');

async function pollQuestions() {
  try {
    const data = await getJSON('api/questions?page=' + pageID);
    const list = $('#question-list');
    const ids = data.questions.map((q) => q.id).join(',');
    if (list.dataset.ids !== ids) {
      list.dataset.ids = ids;
      list.replaceChildren(...data.questions.map(questionItem));
    }
    for (const q of data.questions) shownQuestions.set(q.id, q.call_id);
    for (const st of data.settled || []) {
      if (!shownQuestions.has(st.id)) continue;
      shownQuestions.delete(st.id);
      // The page's own answers are shown on the question already.
      if (st.by === 'the console') continue;
      $('#question-log').append(el('li', 'settled', settledText(st)));
      $('#answered').hidden = false;
    }
    $('#questions').hidden = data.questions.length === 0;
    if (data.ended) {
      showEnded(data.ended);
      return; // nothing more will be asked
    }
  } catch (err) {
    // The console went away; try again.
  }
  setTimeout(pollQuestions, 500);
}

function settledText(st) {
  if (st.withdrawn && st.why) return `call ${st.call_id}: the question was withdrawn: ${st.why}`;
  if (st.withdrawn) return `call ${st.call_id}: the question was withdrawn (the run went on without it)`;
  return `call ${st.call_id}: ${st.approved ? 'approved' : 'refused'} in ${st.by}`;
}

function questionItem(q) {
  const li = el('li', 'approval question');
  li.dataset.id = q.id;
  li.dataset.kind = q.kind;
  const asked = q.index >= 0 ? `, action ${q.index + 1}: ${q.summary}` : (q.summary ? `: ${q.summary}` : '');
  li.append(el('div', '', `${q.kind.replaceAll('_', ' ')} for call ${q.call_id}${asked}`));
  // The whole question of a call that is no list of actions (an MCP
  // client's exec_py code, a browser call).
  if (q.detail) li.append(el('pre', 'detail', q.detail));
  if (q.checks && q.checks.length) li.append(el('div', 'bad', 'Checks: ' + q.checks.join('; ')));
  if (q.actions && q.actions.length) li.append(el('div', '', 'The call: ' + q.actions.map((a, i) => `${i + 1}. ${a}`).join(', ')));
  if (q.shot && q.shot.file && q.run) {
    // The screenshot the model chose the actions from, with them drawn;
    // the one asked about is marked.
    const box = el('div', 'shot');
    const img = el('img');
    img.alt = `screenshot ${q.shot.file}`;
    img.src = `api/runs/${encodeURIComponent(q.run)}/${encodeURIComponent(q.shot.file)}`;
    const drawn = marks(q.shot, (q.marks || []).map((m) => ({ mark: m })));
    if (q.index >= 0) drawn.querySelectorAll(`g[data-i="${q.index}"]`).forEach((g) => g.classList.add('asked'));
    box.append(img, drawn);
    li.append(box);
  }
  const answer = async (word, button) => {
    yes.disabled = no.disabled = true;
    const r = await fetch('api/questions/' + encodeURIComponent(q.id), { method: 'POST', body: word, credentials: 'same-origin' });
    li.append(el('div', r.ok ? 'muted' : 'bad', r.ok ? `answered: ${word}` : await r.text()));
  };
  const yes = el('button', 'approve', 'Approve');
  const no = el('button', 'deny', 'Deny');
  yes.type = no.type = 'button';
  yes.addEventListener('click', () => answer('approve', yes));
  no.addEventListener('click', () => answer('deny', no));
  li.append(yes, document.createTextNode(' '), no);
  return li;
}

// ---- routing ------------------------------------------------------------

function showError(err) {
  const end = $('#run-end');
  end.replaceChildren(el('div', 'error', String(err)));
}

async function route() {
  const h = location.hash || '#/';
  const live = h === '#/' || h === '';
  // #/evals/EVAL is an evaluation's table, #/evals/EVAL/TASK/TRIAL a
  // trial's run.
  const evalPath = h.startsWith('#/evals/') ? h.slice('#/evals/'.length).split('/').map(decodeURIComponent) : null;
  const trial = evalPath && evalPath.length === 3;
  $('#live-section').hidden = !live;
  $('#runs-section').hidden = live || h !== '#/runs';
  $('#evals-section').hidden = h !== '#/evals';
  $('#eval-section').hidden = !evalPath || evalPath.length !== 1;
  $('#run-section').hidden = !h.startsWith('#/runs/') && !trial;
  clearTimeout(refresh);
  try {
    if (live) await showRuns().then(() => { $('#runs-section').hidden = false; });
    else if (h === '#/runs') await showRuns();
    else if (h === '#/evals') await showEvals();
    else if (h.startsWith('#/runs/')) await showRun('api/runs/' + encodeURIComponent(decodeURIComponent(h.slice('#/runs/'.length))));
    else if (evalPath && evalPath.length === 1) await showEval(evalPath[0]);
    else if (trial) {
      const [ev, task, k] = evalPath;
      await showRun(`api/evals/${evalPath.map(encodeURIComponent).join('/')}`,
        { href: '#/evals/' + encodeURIComponent(ev), text: `◀ Evaluation ${ev}: ${task}, trial ${k}` });
    }
  } catch (err) {
    showError(err);
  }
}

$('#prev').addEventListener('click', () => { replay.pos = Math.max(0, replay.pos < 0 ? 0 : replay.pos - 1); drawSteps(); });
$('#next').addEventListener('click', () => { replay.pos = Math.min(replay.run.step_list.length - 1, replay.pos + 1); drawSteps(); });
$('#all').addEventListener('click', () => { replay.pos = -1; drawSteps(); });
window.addEventListener('hashchange', route);
startLive();
pollQuestions();
route();
