// app.js enhances the server-rendered pages; every page also works without
// it. Chat pages follow /api/stream (live text, then fresh fragments), every
// page follows /api/activity (the sidebar), and the forms post with fetch.
'use strict';
(() => {
  const conv = document.body.dataset.conversation || '';
  const lastSeq = document.body.dataset.lastSeq || '0';
  const byTestId = (id, root = document) => root.querySelector('[data-testid="' + id + '"]');

  // Stored event types. SSE delivers named events only to listeners of that
  // name, so each is listed; 'message' catches events sent without a name.
  const STORED = ['message', 'conversation_opened', 'conversation_closed', 'message_received',
    'run_started', 'model_called', 'tool_called', 'tool_completed', 'run_finished',
    'steer_received', 'steers_applied', 'guard_reminded', 'approval_requested',
    'approval_decided', 'route_fallback', 'model_retried', 'context_compacted', 'escalated', 'hook_ran', 'conversation_summarized', 'run_resumed', 'nested_call',
    'question_asked', 'question_answered', 'question_expired', 'run_stop_requested', 'task_notification'];

  const debounce = (fn, ms) => {
    let t;
    return () => { clearTimeout(t); t = setTimeout(fn, ms); };
  };

  // swap replaces the element with this id by the one url renders, keeping
  // the tool cards the reader opened open. Stale answers are dropped.
  const generation = {};
  async function swap(id, url, force) {
    const n = (generation[id] = (generation[id] || 0) + 1);
    let html;
    try {
      const res = await fetch(url, { headers: { Accept: 'text/html' }, credentials: 'same-origin' });
      if (!res.ok) throw new Error(url + ': HTTP ' + res.status);
      html = await res.text();
    } catch (err) {
      console.warn(err);
      return null;
    }
    const old = document.getElementById(id);
    if (n !== generation[id] || !old) return null;
    const tpl = document.createElement('template');
    tpl.innerHTML = html.trim();
    const fresh = tpl.content.getElementById(id);
    if (!fresh) return null;
    // A chat the live feed has patched as far as this answer holds stays
    // (its elements may be in use); forced: something outside its events
    // changed (a delegated child's approval).
    if (id === 'chat' && !force && Number(fresh.dataset.lastSeq || 0) <= Number(old.dataset.lastSeq || 0)) return null;
    const open = new Set([...old.querySelectorAll('details[open][data-call-id]')].map((d) => d.dataset.callId));
    fresh.querySelectorAll('details[data-call-id]').forEach((d) => { if (open.has(d.dataset.callId)) d.open = true; });
    old.replaceWith(fresh);
    return fresh;
  }

  // The live reply of the model call in flight, kept here so that a
  // fragment swap mid-stream does not lose it. A stored model_called means
  // the fragment now holds that text, so the live copy is dropped.
  const live = { text: '', tool: '', toolKey: '' };
  function resetLive() { live.text = ''; live.tool = ''; live.toolKey = ''; }
  function renderLive() {
    const reply = byTestId('live-reply');
    const tool = byTestId('live-tool');
    if (reply) { reply.textContent = live.text; reply.hidden = !live.text; }
    if (tool) { tool.textContent = live.tool; tool.hidden = !live.tool; }
  }

  // main scrolls, not the window (app.css), so the banner above it stays
  // in sight; the window is the fallback when the styles did not load.
  const scroller = () => {
    const m = document.getElementById('main');
    return m && getComputedStyle(m).overflowY === 'auto' ? m : null;
  };
  const nearBottom = () => {
    const m = scroller();
    return m ? m.scrollTop + m.clientHeight >= m.scrollHeight - 120
      : window.innerHeight + window.scrollY >= document.documentElement.scrollHeight - 120;
  };
  const toBottom = () => {
    const m = scroller();
    if (m) m.scrollTop = m.scrollHeight;
    else window.scrollTo(0, document.documentElement.scrollHeight);
  };

  // A chat read at its end stays at its end when its box changes size (a
  // narrower window, the phone's keyboard).
  let stuck = true;
  const main = document.getElementById('main');
  if (main && conv && document.getElementById('chat')) {
    main.addEventListener('scroll', () => { stuck = nearBottom(); }, { passive: true });
    if (window.ResizeObserver) new ResizeObserver(() => { if (stuck) toBottom(); }).observe(main);
  }

  async function updateChat(force) {
    if (!conv || !document.getElementById('chat')) return;
    const chat = await swap('chat', '/c/' + encodeURIComponent(conv) + '/fragment', force);
    if (!chat) return;
    renderLive();
    tick();
    showStop(chat.dataset.active === 'true');
    const status = byTestId('conv-status');
    if (status && chat.dataset.status) {
      status.dataset.status = chat.dataset.status;
      status.className = 'badge status-' + chat.dataset.status;
      status.textContent = chat.dataset.statusLabel || chat.dataset.status;
    }
    toBottom();
  }
  const refreshChat = debounce(() => updateChat(false), 50);
  const refreshChildChat = debounce(() => updateChat(true), 50);

  // The composer's Stop shows while a run is open or messages wait.
  function showStop(active) {
    const stop = byTestId('stop-button');
    if (stop) stop.hidden = !active;
  }

  const refreshSidebar = debounce(() => swap('sidebar', '/fragments/sidebar'), 50);

  // A conversation's runs page follows its runs as they go: a script's
  // calls appear on the run card as each ends (nested_call).
  const refreshRuns = debounce(() => {
    if (conv && document.getElementById('runs')) swap('runs', '/c/' + encodeURIComponent(conv) + '/runs');
  }, 100);

  function onDelta(ev) {
    let msg;
    try { msg = JSON.parse(ev.data); } catch { return; }
    const d = (msg && msg.delta) || {};
    document.dispatchEvent(new CustomEvent('crew:delta', { detail: d })); // canvas.js: the draft
    const stick = nearBottom();
    if (d.text) live.text += d.text;
    if (d.tool_name || d.arguments_delta) {
      const key = d.tool_call_index != null ? String(d.tool_call_index) : d.tool_call_id || live.toolKey;
      if (key !== live.toolKey) {
        live.toolKey = key;
        if (live.tool) live.tool += '\n';
        if (d.tool_name) live.tool += d.tool_name + ' ';
      }
      live.tool += d.arguments_delta || '';
    }
    renderLive();
    if (stick) toBottom();
  }

  // 1. The conversation's own feed (/c/{id}/live): live deltas, and after
  // each stored event a patch of the chat elements whose look changed.
  const RESETS = ['model_called', 'run_finished', 'model_retried', 'route_fallback', 'resync'];
  function openSet(root) {
    return new Set([...root.querySelectorAll('details[open][data-call-id]')].map((d) => d.dataset.callId));
  }
  function parse(html) {
    const tpl = document.createElement('template');
    tpl.innerHTML = html.trim();
    return tpl.content;
  }
  function keepOpen(root, open) {
    root.querySelectorAll('details[data-call-id]').forEach((d) => { if (open.has(d.dataset.callId)) d.open = true; });
  }
  function setPart(id, html, open) {
    const part = document.getElementById(id);
    if (!part || html == null) return;
    const fresh = parse(html);
    keepOpen(fresh, open);
    part.replaceChildren(fresh);
  }
  function applyPatch(p) {
    // The chat now holds that text (a retry or another route keeps what
    // was shown as an interrupted reply), so the live copy goes.
    if (RESETS.includes(p.type)) resetLive();
    const chat = document.getElementById('chat');
    const items = document.getElementById('chat-items');
    if (!chat || !items) return;
    const open = openSet(chat);
    (p.slots || []).forEach((s) => {
      const old = items.querySelector(':scope > [data-slot="' + s.slot + '"]');
      const fresh = s.html ? parse(s.html).firstElementChild : null;
      if (fresh) keepOpen(fresh, open);
      if (old) {
        if (fresh) old.replaceWith(fresh); else old.remove();
        return;
      }
      if (!fresh) return;
      const next = [...items.children].find((c) => Number(c.dataset.slot) > s.slot);
      items.insertBefore(fresh, next || null);
    });
    setPart('chat-dropped', p.dropped, open);
    setPart('chat-tail', p.tail, open);
    chat.dataset.lastSeq = String(p.seq);
    chat.dataset.status = p.status;
    chat.dataset.statusLabel = p.status_label;
    chat.dataset.active = String(p.active);
    renderLive();
    tick();
    showStop(p.active);
    const status = byTestId('conv-status');
    if (status && p.status) {
      status.dataset.status = p.status;
      status.className = 'badge status-' + p.status;
      status.textContent = p.status_label || p.status;
    }
    toBottom();
  }
  if (conv && document.getElementById('chat')) {
    const es = new EventSource('/c/' + encodeURIComponent(conv) + '/live?after=' + encodeURIComponent(lastSeq));
    es.addEventListener('delta', onDelta);
    es.addEventListener('chat', (ev) => {
      let p;
      try { p = JSON.parse(ev.data); } catch { return; }
      applyPatch(p);
    });
    toBottom();
  }

  // 1b. A runs page follows its conversation's stream: a script's calls
  // reach the run card as each ends (nested_call).
  if (conv && document.getElementById('runs')) {
    const es = new EventSource('/api/stream?conversation=' + encodeURIComponent(conv) + '&after=' + encodeURIComponent(lastSeq));
    STORED.forEach((type) => es.addEventListener(type, refreshRuns));
  }

  // 1c. A team page follows its team (/api/teams/{id}/stream): the
  // members, the board and the mail are fetched again on every change.
  const teamLive = document.getElementById('team-live');
  if (teamLive && teamLive.dataset.team) {
    const team = teamLive.dataset.team;
    const refreshTeam = debounce(() => swap('team-live', '/c/' + encodeURIComponent(team) + '/team'), 100);
    const es = new EventSource('/api/teams/' + encodeURIComponent(team) + '/stream?after=' + encodeURIComponent(teamLive.dataset.after || '0'));
    es.addEventListener('team', refreshTeam);
  }

  // 2. The activity feed of all conversations keeps the sidebar current and
  // catches changes made elsewhere (an approval decided in another tab).
  if (document.getElementById('sidebar')) {
    // after=0 would replay the whole log; without it the feed starts now.
    const es = new EventSource('/api/activity' + (lastSeq !== '0' ? '?after=' + encodeURIComponent(lastSeq) : ''));
    const onActivity = (ev) => {
      refreshSidebar();
      let c = '';
      try { c = JSON.parse(ev.data).conversation || ''; } catch { /* not JSON: sidebar only */ }
      // A delegated child of this chat (its pinned card names it) changed:
      // its approval or answer shows here. The chat's own events come as
      // patches on its live feed.
      const child = c && c !== conv && document.querySelector('[data-child-conversation="' + CSS.escape(c) + '"]');
      if (conv && child) refreshChildChat();
      // Its delegated children (ChildID: <conversation>-d-…) nest in its runs.
      if (conv && c.startsWith(conv + '-d-')) refreshRuns();
    };
    STORED.forEach((type) => es.addEventListener(type, onActivity));
    // Jobs and Telegram messages given up: the sidebar's activity strip.
    ['job_scheduled', 'job_fired', 'job_completed', 'job_failed', 'job_skipped', 'job_retry_scheduled', 'job_cancelled',
      'telegram_send_failed'].forEach((type) => es.addEventListener(type, refreshSidebar));
    // Canvas events reach every tab (canvas.js).
    ['artifact_created', 'artifact_written', 'artifact_renamed', 'artifact_deleted'].forEach((type) => es.addEventListener(type, (ev) => {
      let detail = {};
      try { detail = JSON.parse(ev.data); } catch { /* not JSON */ }
      document.dispatchEvent(new CustomEvent('crew:canvas', { detail }));
    }));
  }

  // 3 and 4. The composer, the approval form and the question box post
  // with fetch.
  async function errorText(res) {
    try {
      const body = await res.json();
      if (body && body.error && body.error.message) return body.error.message;
    } catch { /* not JSON */ }
    return 'HTTP ' + res.status + ' ' + res.statusText;
  }
  function showError(el, text) { if (el) { el.textContent = text; el.hidden = !text; } }

  document.addEventListener('submit', async (ev) => {
    const form = ev.target;
    const kind = form.dataset.testid;
    if (kind === 'stop-all-form' && !window.confirm('Stop every running conversation and drop the messages waiting?')) {
      ev.preventDefault();
      return;
    }
    if (kind !== 'composer' && kind !== 'approval-form' && kind !== 'question-form' && kind !== 'stop-form' && kind !== 'queue-remove-form') return;
    ev.preventDefault();
    const data = new FormData(form);
    if (ev.submitter && ev.submitter.name) data.set(ev.submitter.name, ev.submitter.value);
    const errEl = kind === 'stop-form' ? byTestId('composer-error')
      : byTestId({ composer: 'composer-error', 'approval-form': 'approval-error', 'question-form': 'question-error' }[kind], form);
    const buttons = kind === 'stop-form' ? document.querySelectorAll('[form="stop-form"]') : form.querySelectorAll('button');
    buttons.forEach((b) => { b.disabled = true; });
    try {
      // The composer posts multipart (its images with it); other forms as
      // urlencoded.
      const res = await fetch(form.action, {
        method: 'POST', body: kind === 'composer' ? data : new URLSearchParams(data), credentials: 'same-origin',
        headers: { Accept: 'application/json' },
      });
      if (!res.ok) {
        showError(errEl, await errorText(res));
        if (kind !== 'composer') refreshChat(); // already decided, answered or expired
        return;
      }
      showError(errEl, '');
      if (kind === 'composer') {
        document.dispatchEvent(new CustomEvent('crew:sent')); // this tab sent it: canvas.js shows the draft here
        form.elements.text.value = '';
        if (form.elements.image) { form.elements.image.value = ''; showFiles(form); }
        if (!conv) { // the first message of a new chat: go to it
          let id = '';
          try { id = (await res.json()).conversation_id || ''; } catch { /* a redirect, not JSON */ }
          window.location.href = id ? '/c/' + encodeURIComponent(id) : (res.redirected ? res.url : '/');
          return;
        }
      }
      refreshChat();
    } catch (err) {
      showError(errEl, String(err.message || err));
    } finally {
      buttons.forEach((b) => { b.disabled = false; });
    }
  });

  // Enter sends, Shift+Enter starts a new line, Esc stops the running turn.
  document.addEventListener('keydown', (ev) => {
    const t = ev.target;
    if (ev.key === 'Escape' && t.matches && t.matches('[data-testid="composer-text"]')) {
      const stop = byTestId('stop-button');
      const form = document.getElementById('stop-form');
      if (stop && !stop.hidden && form) {
        ev.preventDefault();
        form.requestSubmit(stop);
      }
      return;
    }
    if (ev.key !== 'Enter' || ev.shiftKey || ev.isComposing || !t.matches || !t.matches('[data-testid="composer-text"]')) return;
    ev.preventDefault();
    const img = t.form.elements.image;
    if (t.value.trim() || (img && img.files.length)) t.form.requestSubmit();
  });

  // Images: chosen with the 📎 input, pasted into the text or dropped on
  // the composer; the names of those chosen show under it.
  function showFiles(form) {
    const el = byTestId('composer-files', form);
    const input = form.elements.image;
    if (!el || !input) return;
    const names = [...input.files].map((f) => f.name || 'pasted image');
    el.textContent = names.length ? 'Attached: ' + names.join(', ') : '';
    el.hidden = !names.length;
  }
  function addImages(form, files) {
    const input = form && form.elements.image;
    const imgs = [...files].filter((f) => /^image\/(png|jpeg|gif|webp)$/.test(f.type));
    if (!input || !imgs.length) return false;
    const dt = new DataTransfer();
    [...input.files, ...imgs].forEach((f) => dt.items.add(f));
    input.files = dt.files;
    showFiles(form);
    return true;
  }
  document.addEventListener('change', (ev) => {
    if (ev.target.matches && ev.target.matches('[data-testid="composer-image"]')) showFiles(ev.target.form);
  });
  document.addEventListener('paste', (ev) => {
    const t = ev.target;
    if (!t.matches || !t.matches('[data-testid="composer-text"]') || !ev.clipboardData) return;
    if (addImages(t.form, ev.clipboardData.files)) ev.preventDefault();
  });
  document.addEventListener('dragover', (ev) => {
    const form = ev.target.closest && ev.target.closest('[data-testid="composer"]');
    if (!form) return;
    ev.preventDefault();
    form.classList.add('dropping');
  });
  document.addEventListener('dragleave', (ev) => {
    const form = ev.target.closest && ev.target.closest('[data-testid="composer"]');
    if (form) form.classList.remove('dropping');
  });
  document.addEventListener('drop', (ev) => {
    const form = ev.target.closest && ev.target.closest('[data-testid="composer"]');
    if (!form || !ev.dataTransfer) return;
    form.classList.remove('dropping');
    if (addImages(form, ev.dataTransfer.files)) ev.preventDefault();
  });

  // 5. The approval countdown.
  function tick() {
    document.querySelectorAll('[data-testid="approval-time-left"][data-expires]').forEach((el) => {
      const left = Math.floor((Date.parse(el.dataset.expires) - Date.now()) / 1000);
      if (Number.isNaN(left)) return;
      el.textContent = left <= 0 ? 'expired'
        : Math.floor(left / 60) + 'm ' + String(left % 60).padStart(2, '0') + 's left';
    });
  }
  tick();
  setInterval(tick, 1000);
})();
