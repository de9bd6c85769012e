// canvas.js is the canvas panel (R-CAN): beside the chat on wide screens,
// over it on phones, and on the library page. It reads and writes through
// /api/artifacts, autosaves after a pause, shows the history with diffs,
// restores, renames, downloads and deletes; it hears every canvas event
// (app.js's activity feed, "crew:canvas") and shows the draft the model is
// writing ("crew:delta") in the tab that sent the message only.
'use strict';
(() => {
  const panel = document.getElementById('canvas-panel');
  if (!panel) return;
  const conv = panel.dataset.conversation || '';
  const $ = (id) => panel.querySelector('[data-testid="' + id + '"]');
  const editor = $('canvas-editor');
  const preview = $('canvas-preview');
  const saveEl = $('canvas-save');
  const conflict = $('canvas-conflict');
  const draftEl = $('canvas-draft');
  const history = $('canvas-history');
  const TEXT_KINDS = ['markdown', 'code', 'mermaid', 'html', 'svg'];
  let cur = null; // {id, title, kind, version, latest_version, content, author}
  let dirty = false;
  let saving = null;

  const api = async (method, url, body) => {
    const opts = { method, credentials: 'same-origin', headers: { Accept: 'application/json' } };
    if (body !== undefined) {
      opts.body = JSON.stringify(body);
      opts.headers['Content-Type'] = 'application/json';
    }
    const res = await fetch(url, opts);
    let data = null;
    try { data = await res.json(); } catch { /* not JSON */ }
    return { status: res.status, ok: res.ok, data: data || {} };
  };
  const art = (id, rest = '') => '/api/artifacts/' + encodeURIComponent(id) + rest;
  const status = (text) => { saveEl.textContent = text; };
  const showConflict = (text) => { conflict.textContent = text; conflict.hidden = !text; };

  function show(on) {
    panel.hidden = !on;
    document.body.classList.toggle('canvas-open', on);
  }

  async function focus(artifact, from, to) {
    if (!conv) return;
    const body = { artifact: artifact || '' };
    if (artifact && from) { body.from_line = from; body.to_line = to; }
    await api('PUT', '/api/conversations/' + encodeURIComponent(conv) + '/canvas', body);
  }

  function render() {
    $('canvas-title').textContent = cur.title;
    $('canvas-version').textContent = 'v' + cur.version + (cur.version !== cur.latest_version ? ' of ' + cur.latest_version : '') + ' · ' + cur.kind + ' · by ' + cur.author;
    $('canvas-download').href = art(cur.id, '/download');
    panel.dataset.artifact = cur.id;
    panel.dataset.version = String(cur.version);
    preview.replaceChildren();
    if (cur.kind === 'html' || cur.kind === 'mermaid') {
      const f = document.createElement('iframe');
      f.setAttribute('sandbox', 'allow-scripts'); // never allow-same-origin
      f.setAttribute('referrerpolicy', 'no-referrer');
      f.setAttribute('title', cur.title);
      f.dataset.testid = 'canvas-render';
      f.src = art(cur.id, '/render') + '?version=' + cur.version;
      preview.append(f);
    } else if (cur.kind === 'svg' || cur.kind === 'image') {
      const img = document.createElement('img'); // shown, never run
      img.alt = cur.title;
      img.dataset.testid = 'canvas-image';
      img.src = art(cur.id, '/download') + '?v=' + cur.version;
      preview.append(img);
    }
    preview.hidden = !preview.firstChild;
    editor.hidden = !TEXT_KINDS.includes(cur.kind);
    if (!dirty) editor.value = cur.kind === 'image' ? '' : cur.content;
  }

  async function open(id, version) {
    const r = await api('GET', art(id, version ? '?version=' + version : ''));
    if (!r.ok) { status((r.data.error && r.data.error.message) || 'HTTP ' + r.status); return false; }
    const changed = !cur || cur.id !== id;
    cur = r.data;
    dirty = false;
    showConflict('');
    draftEl.hidden = true;
    render();
    show(true);
    status('');
    if (changed) { history.hidden = true; focus(id); }
    return true;
  }

  // Autosave after a pause in typing; a save on a base that is no longer
  // the latest comes back 409 with what changed.
  let timer;
  editor.addEventListener('input', () => {
    if (!cur) return;
    dirty = true;
    status('editing…');
    clearTimeout(timer);
    timer = setTimeout(save, 1200);
  });
  async function save() {
    if (!cur || !dirty) return;
    const content = editor.value;
    saving = api('PUT', art(cur.id), { content, base_version: cur.latest_version });
    const r = await saving;
    saving = null;
    if (r.status === 409 && r.data.diff !== undefined) {
      showConflict('Changed meanwhile (now v' + r.data.latest_version + '). Your text is kept here; this is what changed:\n' + r.data.diff);
      status('not saved');
      return;
    }
    if (!r.ok) { status('not saved: ' + ((r.data.error && r.data.error.message) || r.status)); return; }
    dirty = editor.value !== content;
    cur.content = content;
    cur.version = cur.latest_version = r.data.version;
    cur.author = 'owner';
    status(r.data.changed ? 'saved v' + r.data.version : 'no change');
    render();
  }

  // The selected lines travel with the next web message.
  const selection = () => {
    if (!cur || !conv) return;
    const a = editor.value.slice(0, editor.selectionStart).split('\n').length;
    const b = editor.value.slice(0, editor.selectionEnd).split('\n').length;
    if (editor.selectionStart === editor.selectionEnd) focus(cur.id);
    else focus(cur.id, a, b);
  };
  let selTimer;
  ['mouseup', 'keyup'].forEach((t) => editor.addEventListener(t, () => { clearTimeout(selTimer); selTimer = setTimeout(selection, 400); }));

  // Rename in place.
  $('canvas-title').addEventListener('click', () => {
    if (!cur) return;
    const input = document.createElement('input');
    input.value = cur.title;
    input.dataset.testid = 'canvas-rename';
    input.className = 'canvas-rename';
    $('canvas-title').replaceWith(input);
    input.focus();
    const done = async (keep) => {
      input.replaceWith($title);
      if (keep && input.value.trim() && input.value.trim() !== cur.title) {
        const r = await api('PATCH', art(cur.id), { title: input.value.trim() });
        if (r.ok) { cur.title = r.data.title; render(); } else status('not renamed');
      }
    };
    input.addEventListener('keydown', (ev) => {
      if (ev.key === 'Enter') { ev.preventDefault(); done(true); }
      if (ev.key === 'Escape') done(false);
    });
    input.addEventListener('blur', () => { if (input.isConnected) done(true); });
  });
  const $title = $('canvas-title');

  // Delete asks once more on the same button.
  const del = $('canvas-delete');
  del.addEventListener('click', async () => {
    if (!cur) return;
    if (del.dataset.confirm !== '1') {
      del.dataset.confirm = '1';
      del.textContent = 'Delete every version?';
      setTimeout(() => { del.dataset.confirm = ''; del.textContent = 'Delete'; }, 4000);
      return;
    }
    del.dataset.confirm = '';
    del.textContent = 'Delete';
    const r = await api('DELETE', art(cur.id));
    if (r.ok) close();
  });

  function close() {
    cur = null;
    dirty = false;
    show(false);
    focus('');
  }
  $('canvas-close').addEventListener('click', close);

  // History: every version, a diff against the one before, restore.
  $('canvas-history-button').addEventListener('click', async () => {
    if (!cur) return;
    if (!history.hidden) { history.hidden = true; return; }
    const r = await api('GET', art(cur.id, '/versions'));
    if (!r.ok) return;
    const list = $('canvas-versions');
    list.replaceChildren();
    $('canvas-diff').textContent = '';
    r.data.versions.forEach((v) => {
      const li = document.createElement('li');
      li.dataset.testid = 'canvas-version-row';
      li.dataset.version = String(v.version);
      const label = document.createElement('button');
      label.type = 'button';
      label.dataset.testid = 'canvas-version-diff';
      label.textContent = 'v' + v.version + ' · ' + v.author + ' · ' + new Date(v.time).toLocaleString() + (v.note ? ' · ' + v.note : '');
      label.addEventListener('click', () => diffOf(v.version));
      li.append(label);
      if (v.version !== cur.latest_version) {
        const rb = document.createElement('button');
        rb.type = 'button';
        rb.dataset.testid = 'canvas-restore';
        rb.textContent = 'Restore';
        rb.addEventListener('click', async () => {
          const rr = await api('POST', art(cur.id, '/restore'), { version: v.version });
          if (rr.ok) { history.hidden = true; await open(cur.id); status(rr.data.changed ? 'restored as v' + rr.data.version : 'no change'); }
        });
        li.append(rb);
      }
      list.append(li);
    });
    history.hidden = false;
  });
  async function diffOf(version) {
    const get = async (v) => (v < 1 ? { content: '' } : (await api('GET', art(cur.id, '?version=' + v))).data);
    const [a, b] = await Promise.all([get(version - 1), get(version)]);
    $('canvas-diff').textContent = 'v' + (version - 1) + ' → v' + version + '\n' + lineDiff(a.content || '', b.content || '');
  }
  // lineDiff is a small LCS line diff for the history (canvases are capped).
  function lineDiff(a, b) {
    const x = a.split('\n'), y = b.split('\n');
    if (x.length * y.length > 4e6) return '(too long to compare here; download both versions)';
    const n = x.length, m = y.length;
    const t = Array.from({ length: n + 1 }, () => new Uint32Array(m + 1));
    for (let i = n - 1; i >= 0; i--) for (let j = m - 1; j >= 0; j--) t[i][j] = x[i] === y[j] ? t[i + 1][j + 1] + 1 : Math.max(t[i + 1][j], t[i][j + 1]);
    const out = [];
    let i = 0, j = 0;
    while (i < n || j < m) {
      if (i < n && j < m && x[i] === y[j]) { out.push('  ' + x[i]); i++; j++; } else if (j < m && (i >= n || t[i][j + 1] >= t[i + 1][j])) { out.push('+ ' + y[j]); j++; } else { out.push('- ' + x[i]); i++; }
    }
    return out.join('\n');
  }

  // Open links (chat cards, the library) open the panel in place.
  document.addEventListener('click', (ev) => {
    const a = ev.target.closest && ev.target.closest('a.canvas-open[data-artifact]');
    if (!a) return;
    ev.preventDefault();
    open(a.dataset.artifact);
  });

  // Every canvas event reaches every open tab.
  document.addEventListener('crew:canvas', async (ev) => {
    const e = ev.detail || {};
    if (document.querySelector('[data-testid="canvas-library"], [data-testid="no-canvases"]')) refreshLibrary();
    if (!cur || e.artifact !== cur.id) {
      if (mine && e.conversation === conv && (e.type === 'artifact_created' || e.type === 'artifact_written')) { mine = false; open(e.artifact); }
      return;
    }
    if (e.type === 'artifact_deleted') { close(); return; }
    if (saving) await saving;
    if (e.version && e.version === cur.latest_version && e.author === 'owner') return; // our own save
    if (dirty) { showConflict('Changed meanwhile by ' + (e.author || 'someone') + ' (now v' + (e.version || '?') + '); your text is kept here.'); return; }
    open(cur.id);
  });
  async function refreshLibrary() {
    try {
      const res = await fetch(location.pathname + location.search, { credentials: 'same-origin', headers: { Accept: 'text/html' } });
      const tpl = document.createElement('template');
      tpl.innerHTML = await res.text();
      const fresh = tpl.content.querySelector('[data-testid="canvas-library"], [data-testid="no-canvases"]');
      const old = document.querySelector('[data-testid="canvas-library"], [data-testid="no-canvases"]');
      if (fresh && old) old.replaceWith(fresh);
    } catch (err) { console.warn(err); }
  }

  // The draft the model is writing (artifact_create / artifact_rewrite),
  // read-only, in the tab that sent the message.
  let mine = false;
  const drafts = {};
  document.addEventListener('crew:sent', () => { mine = true; });
  document.addEventListener('crew:delta', (ev) => {
    const d = ev.detail || {};
    if (!mine) return;
    const key = String(d.tool_call_index != null ? d.tool_call_index : d.tool_call_id);
    if (d.tool_name) drafts[key] = { name: d.tool_name, args: '' };
    const dr = drafts[key];
    if (!dr || (dr.name !== 'artifact_create' && dr.name !== 'artifact_rewrite')) return;
    dr.args += d.arguments_delta || '';
    const content = partialString(dr.args, 'content');
    if (content === null) return;
    draftEl.textContent = content;
    draftEl.hidden = false;
    panel.dataset.draftSeen = '1';
    if (panel.hidden) {
      $('canvas-title').textContent = partialString(dr.args, 'title') || 'Draft';
      $('canvas-version').textContent = 'being written…';
      editor.hidden = true;
      preview.hidden = true;
      show(true);
    }
  });
  // partialString decodes the JSON string value of key from arguments
  // still being written.
  function partialString(raw, key) {
    const m = new RegExp('"' + key + '"\\s*:\\s*"').exec(raw);
    if (!m) return null;
    let s = raw.slice(m.index + m[0].length);
    let end = 0;
    for (; end < s.length; end++) {
      if (s[end] === '\\') { end++; continue; }
      if (s[end] === '"') break;
    }
    s = s.slice(0, end).replace(/\\u[0-9a-fA-F]{0,3}$|\\$/, '');
    try { return JSON.parse('"' + s + '"'); } catch { return null; }
  }

  // Mermaid renders tell their height.
  window.addEventListener('message', (ev) => {
    const f = preview.querySelector('iframe');
    if (f && ev.source === f.contentWindow && ev.data && typeof ev.data.canvasHeight === 'number') {
      f.style.height = Math.min(Math.max(ev.data.canvasHeight + 20, 120), 4000) + 'px';
    }
  });

  if (panel.dataset.open) open(panel.dataset.open);
  else if (conv) {
    api('GET', '/api/conversations/' + encodeURIComponent(conv) + '/canvas').then((r) => { if (r.ok && r.data.artifact) open(r.data.artifact); });
  }
})();
