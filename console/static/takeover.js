// Take over and hand back: while this page holds the desktop (agentd's
// lease), the pointer and the keyboard on the live view go to the desktop,
// through the console, as computer-tool actions in the frame's pixels.
// The model's actions are refused by agentd meanwhile; "Hand back" returns
// the desktop with an optional note for the model.
'use strict';

(() => {
  const canvas = document.querySelector('#live');
  const box = document.querySelector('#takeover');
  if (!canvas || !box) return;
  const take = document.querySelector('#take');
  const back = document.querySelector('#handback');
  const note = document.querySelector('#note');
  const state = document.querySelector('#takeover-state');
  let ws = null;
  let mine = false;
  let screen = null; // the desktop's size: the pointer is mapped to its pixels

  function show(st) {
    if (st.screen && st.screen.width > 0 && st.screen.height > 0) screen = st.screen;
    const l = st.lease || {};
    mine = !!l.mine;
    box.dataset.held = l.held ? (l.mine ? 'mine' : 'other') : 'free';
    take.disabled = !!l.held && !l.orphaned;
    back.disabled = !mine;
    note.disabled = !mine;
    canvas.classList.toggle('driving', mine);
    let text = 'The model has the desktop.';
    if (mine) text = 'You have the desktop: the model is paused and its actions are refused. Click the view to type.';
    else if (l.held && l.orphaned) text = 'Taken over, but the page that held it went away: the model stays paused until someone takes it and hands it back.';
    else if (l.held) text = 'Another page holds the desktop.';
    state.textContent = text + (st.error ? ' — ' + st.error : '');
    if (st.error) state.dataset.error = st.error;
  }

  function connect() {
    ws = new WebSocket(wsURL('takeover'));
    ws.onmessage = (ev) => show(JSON.parse(ev.data));
    ws.onclose = () => {
      mine = false;
      canvas.classList.remove('driving');
      take.disabled = back.disabled = note.disabled = true;
      stopped.textContent = '';
      if (document.body.dataset.ended) {
        state.textContent = 'The run has ended: there is nothing to take over.';
        return;
      }
      state.textContent = 'Take over is not available now; trying again…';
      setTimeout(connect, 2000);
    };
  }

  // While this page holds the desktop it says which of the model's
  // actions the take over stopped, from the run's record: the call's
  // actions that did not run (they never will; the model gets a fresh
  // screenshot after the hand back).
  const stopped = document.createElement('div');
  stopped.id = 'takeover-stopped';
  box.append(stopped);
  const current = document.body.dataset.current;
  async function showStopped() {
    if (!mine || !current || document.body.dataset.ended) {
      stopped.textContent = '';
      return;
    }
    try {
      const r = await fetch('api/runs/' + encodeURIComponent(current), { credentials: 'same-origin' });
      const run = r.ok ? await r.json() : null;
      let last = null;
      for (const st of (run && run.step_list) || []) for (const tk of st.takeovers || []) last = tk;
      if (!mine) return;
      stopped.textContent = last && !last.handed_back
        ? `Stopped: the model's call ${last.call_id}` + ((last.not_run || []).length ? `; did not run: ${last.not_run.join(', ')}` : ' (its screenshot)') + '.'
        : 'No action of the model has been stopped yet: its next one waits for your hand back.';
    } catch (err) {
      // The console went away; the socket's end says so.
    }
  }
  const following = setInterval(showStopped, 1000);
  document.addEventListener('run-ended', () => clearInterval(following));

  const send = (m) => { if (ws && ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify(m)); };
  const act = (action) => {
    if (mine && screen) send({ op: 'input', action, frame_w: screen.width, frame_h: screen.height });
  };

  take.addEventListener('click', () => { send({ op: 'take' }); canvas.focus(); });
  back.addEventListener('click', () => { flushText(); send({ op: 'hand_back', note: note.value }); note.value = ''; });

  // ---- pointer: a press and release in one place is a click, else a drag
  // through the points the pointer passed; the wheel scrolls.
  // The screen pixel under the pointer: the frame (the whole screen) fills
  // the canvas's content box, inside its border and padding, at any scale.
  const at = (e) => {
    const r = canvas.getBoundingClientRect();
    const cs = getComputedStyle(canvas);
    const px = (name) => parseFloat(cs[name]) || 0;
    const left = r.left + px('borderLeftWidth') + px('paddingLeft');
    const top = r.top + px('borderTopWidth') + px('paddingTop');
    const w = r.right - px('borderRightWidth') - px('paddingRight') - left;
    const h = r.bottom - px('borderBottomWidth') - px('paddingBottom') - top;
    const pixel = (v, n) => Math.max(0, Math.min(n - 1, Math.floor(v)));
    return {
      x: pixel((e.clientX - left) * screen.width / w, screen.width),
      y: pixel((e.clientY - top) * screen.height / h, screen.height),
    };
  };
  const buttons = ['left', 'wheel', 'right', 'back', 'forward'];
  let press = null;
  canvas.addEventListener('contextmenu', (e) => { if (mine) e.preventDefault(); });
  canvas.addEventListener('mousedown', (e) => {
    if (!mine || !screen) return;
    e.preventDefault();
    canvas.focus();
    flushText();
    press = { button: buttons[e.button] || 'left', path: [at(e)] };
  });
  canvas.addEventListener('mousemove', (e) => {
    if (!mine || !press) return;
    const p = at(e), last = press.path[press.path.length - 1];
    if (Math.hypot(p.x - last.x, p.y - last.y) >= 8) press.path.push(p);
  });
  canvas.addEventListener('mouseup', (e) => {
    if (!mine || !press) return;
    const p = at(e), first = press.path[0];
    if (Math.hypot(p.x - first.x, p.y - first.y) < 4) {
      act({ type: 'click', button: press.button, x: first.x, y: first.y });
    } else {
      press.path.push(p);
      act({ type: 'drag', path: press.path });
    }
    press = null;
  });
  canvas.addEventListener('wheel', (e) => {
    if (!mine || !screen) return;
    e.preventDefault();
    const p = at(e);
    act({ type: 'scroll', x: p.x, y: p.y, scroll_x: Math.round(e.deltaX), scroll_y: Math.round(e.deltaY) });
  }, { passive: false });

  // ---- keyboard: characters (any Unicode) gather into one type action;
  // named keys and shortcuts are keypresses.
  let text = '';
  let textTimer = null;
  function flushText() {
    clearTimeout(textTimer);
    if (text) act({ type: 'type', text });
    text = '';
  }
  const mods = (e) => [e.ctrlKey && 'CTRL', e.altKey && 'ALT', e.metaKey && 'META'].filter(Boolean);
  canvas.addEventListener('keydown', (e) => {
    if (!mine) return;
    const single = [...e.key].length === 1;
    if (single && mods(e).length === 0) return; // a character: keypress has it
    if (['Shift', 'Control', 'Alt', 'Meta', 'Unidentified', 'Dead', 'Process'].includes(e.key)) return;
    e.preventDefault();
    flushText();
    const key = e.key === ' ' ? 'SPACE' : e.key.toUpperCase();
    act({ type: 'keypress', keys: [...mods(e), ...(e.shiftKey && !single ? ['SHIFT'] : []), key] });
  });
  canvas.addEventListener('keypress', (e) => {
    // Some input methods report the character only in charCode.
    const ch = [...e.key].length === 1 ? e.key : (e.charCode ? String.fromCodePoint(e.charCode) : '');
    if (!mine || !ch || mods(e).length) return;
    e.preventDefault();
    text += ch;
    clearTimeout(textTimer);
    textTimer = setTimeout(flushText, 300);
  });

  connect();
})();
