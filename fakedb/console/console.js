// console.js: fakedb console's behaviour. Reads /fake/console/api/... once a second and
// draws the views. Everything that comes from the database is put into the page as text
// (textContent, createElement), never as HTML; changes carry X-Fakedb-Console: 1.
'use strict';

(function () {
  const API = '/fake/console/api';
  const state = {
    view: 'tables', clock: null, locks: [], table: null, start: null, pageStarts: [],
    reqSeq: 0, requests: [], lastTotals: null, lastMono: 0,
  };
  const MAX_REQUESTS = 300;

  function $(id) { return document.getElementById(id); }

  function el(tag, text, cls) {
    const e = document.createElement(tag);
    if (text !== undefined && text !== null) e.textContent = String(text);
    if (cls) e.className = cls;
    return e;
  }

  function row(cells) {
    const tr = document.createElement('tr');
    for (const c of cells) {
      const td = document.createElement('td');
      if (c instanceof Node) td.appendChild(c); else td.textContent = c === null || c === undefined ? '' : String(c);
      tr.appendChild(td);
    }
    return tr;
  }

  // One cell across the table's columns, for "nothing here".
  function emptyRow(tbody, text) {
    const tr = document.createElement('tr');
    const td = el('td', text, 'empty');
    td.colSpan = tbody.parentNode.tHead.rows[0].cells.length;
    tr.appendChild(td);
    return tr;
  }

  function fill(tbody, rows) {
    tbody.replaceChildren(...rows);
  }

  // Redraws a table only when what it shows changed, so that a refresh keeps the focus
  // (and a pending click) on its buttons.
  const drawn = new WeakMap();
  function changed(tbody, data) {
    const sig = JSON.stringify(data);
    if (drawn.get(tbody) === sig) return false;
    drawn.set(tbody, sig);
    return true;
  }

  function status(msg) { $('status').textContent = msg || ''; }

  // With separate databases (fakedb --separate-databases) the page's own ?access_key=
  // and &region= name the database shown; every API call carries them on.
  const DB = (() => {
    const q = new URLSearchParams(location.search), out = new URLSearchParams();
    for (const k of ['access_key', 'region']) if (q.get(k)) out.set(k, q.get(k));
    return out.toString();
  })();
  function withDb(path) {
    return DB ? path + (path.includes('?') ? '&' : '?') + DB : path;
  }

  async function get(path) {
    const r = await fetch(API + withDb(path), { cache: 'no-store', credentials: 'same-origin' });
    const body = await r.json().catch(() => ({}));
    if (!r.ok) throw new Error(body.error || body.message || ('HTTP ' + r.status));
    return body;
  }

  async function change(method, path, body) {
    const r = await fetch(API + withDb(path), {
      method, credentials: 'same-origin', cache: 'no-store',
      headers: { 'Content-Type': 'application/json', 'X-Fakedb-Console': '1' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const out = await r.json().catch(() => ({}));
    if (!r.ok) throw new Error(out.error || ('HTTP ' + r.status));
    return out;
  }

  // ---- formatting
  function duration(ms) {
    if (ms === null || ms === undefined) return '';
    const neg = ms < 0; ms = Math.abs(ms);
    let s;
    if (ms < 1000) s = ms + ' ms';
    else if (ms < 60000) s = (ms / 1000).toFixed(3).replace(/\.?0+$/, '') + ' s';
    else if (ms < 3600000) s = Math.floor(ms / 60000) + ' min ' + Math.floor((ms % 60000) / 1000) + ' s';
    else s = Math.floor(ms / 3600000) + ' h ' + Math.floor((ms % 3600000) / 60000) + ' min';
    return (neg ? '-' : '') + s;
  }

  function parseDuration(text) {
    const m = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|min|h|d)?\s*$/i.exec(text);
    if (!m) return null;
    const unit = (m[2] || 'ms').toLowerCase();
    const mult = { ms: 1, s: 1000, m: 60000, min: 60000, h: 3600000, d: 86400000 }[unit];
    return Math.round(parseFloat(m[1]) * mult);
  }

  // DynamoDB JSON to plain JSON: numbers stay exact as strings when a double would round them.
  function plain(v) {
    if (v === null || typeof v !== 'object') return v;
    const t = Object.keys(v)[0];
    const x = v[t];
    switch (t) {
      case 'S': return x;
      case 'N': { const n = Number(x); return String(n) === x || (Number.isSafeInteger(n) && BigInt(x) === BigInt(n)) ? n : x; }
      case 'B': return x;
      case 'BOOL': return x;
      case 'NULL': return null;
      case 'SS': case 'BS': return x.slice();
      case 'NS': return x.map((n) => plain({ N: n }));
      case 'L': return x.map(plain);
      case 'M': return plainItem(x);
      default: return v;
    }
  }
  function plainItem(item) {
    const o = {};
    for (const k of Object.keys(item)) o[k] = plain(item[k]);
    return o;
  }

  function attrText(v) {
    if (v === null || v === undefined) return '';
    const p = plain(v);
    return typeof p === 'string' ? p : JSON.stringify(p);
  }

  // ---- views
  function show(view) {
    state.view = view;
    state.requestsDrawn = false;
    for (const b of document.querySelectorAll('.tab')) {
      if (b.dataset.view === view) b.setAttribute('aria-current', 'page'); else b.removeAttribute('aria-current');
    }
    for (const s of document.querySelectorAll('.view')) s.hidden = s.id !== 'view-' + view;
    drawRequests({ requests: [] }, performance.now());
    refresh();
  }

  async function loadTables() {
    const d = await get('/tables');
    const rows = d.tables.map((e) => {
      const t = e.table;
      const name = el('button', t.TableName);
      name.type = 'button';
      name.setAttribute('aria-label', 'Show the items of ' + t.TableName);
      name.addEventListener('click', () => openTable(t));
      const keys = (t.KeySchema || []).map((k) => {
        const def = (t.AttributeDefinitions || []).find((a) => a.AttributeName === k.AttributeName);
        return k.AttributeName + ' (' + (k.KeyType === 'HASH' ? 'partition' : 'sort') + (def ? ', ' + def.AttributeType : '') + ')';
      }).join(', ');
      const idx = [].concat((t.GlobalSecondaryIndexes || []).map((i) => 'global ' + i.IndexName + ': ' + i.KeySchema.map((k) => k.AttributeName).join(', ')),
        (t.LocalSecondaryIndexes || []).map((i) => 'local ' + i.IndexName + ': ' + i.KeySchema.map((k) => k.AttributeName).join(', '))).join('; ');
      const ttl = e.ttl ? (e.ttl.TimeToLiveStatus + (e.ttl.AttributeName ? ' on ' + e.ttl.AttributeName : '')) : '';
      const ss = t.StreamSpecification;
      const stream = ss && ss.StreamEnabled ? 'on, ' + ss.StreamViewType : 'off';
      return row([name, keys, idx || 'none', t.ItemCount, t.TableSizeBytes, ttl, stream]);
    });
    fill($('tables-list').tBodies[0], rows);
    if (!rows.length) fill($('tables-list').tBodies[0], [emptyRow($('tables-list').tBodies[0], 'no tables')]);
  }

  function openTable(t) {
    state.table = t;
    state.start = null;
    state.pageStarts = [];
    $('items-panel').hidden = false;
    $('history-panel').hidden = true;
    $('items-title').textContent = 'Items of ' + t.TableName;
    loadItems().catch((e) => status(e.message));
    $('items-prefix').focus();
  }

  function keyOf(item, schema) {
    const k = {};
    for (const s of schema) if (item[s.AttributeName] !== undefined) k[s.AttributeName] = item[s.AttributeName];
    return k;
  }

  let itemsLoad = 0;
  async function loadItems() {
    const mine = ++itemsLoad;
    const t = state.table;
    const q = new URLSearchParams({ table: t.TableName, limit: $('items-limit').value || '25' });
    const prefix = $('items-prefix').value;
    if (prefix) q.set('prefix', prefix);
    if (state.start) q.set('start', JSON.stringify(state.start));
    const d = await get('/items?' + q.toString());
    if (mine !== itemsLoad) return; // a later load answers
    const format = $('items-format').value;
    const list = $('items-list');
    list.replaceChildren();
    for (const item of d.items || []) {
      const li = el('li');
      const key = keyOf(item, d.key_schema || []);
      li.appendChild(el('div', Object.keys(key).map((k) => k + ' = ' + attrText(key[k])).join(', '), 'key'));
      li.appendChild(el('pre', JSON.stringify(format === 'plain' ? plainItem(item) : item, null, 2)));
      if (d.stream) {
        const b = el('button', 'History');
        b.type = 'button';
        b.setAttribute('aria-label', 'History of ' + Object.keys(key).map((k) => attrText(key[k])).join(' / '));
        b.addEventListener('click', () => loadHistory(t.TableName, key).catch((e) => status(e.message)));
        li.appendChild(b);
      }
      list.appendChild(li);
    }
    if (!(d.items || []).length) list.appendChild(el('li', 'no items on this page'));
    state.next = d.next || null;
    $('items-next').disabled = !state.next;
    status('');
  }

  async function loadHistory(table, key) {
    const q = new URLSearchParams({ table, key: JSON.stringify(key) });
    const d = await get('/history?' + q.toString());
    $('history-panel').hidden = false;
    $('history-title').textContent = 'History of ' + Object.keys(key).map((k) => attrText(key[k])).join(' / ') + ' (from the stream)';
    const list = $('history-list');
    list.replaceChildren();
    const plainFmt = $('items-format').value === 'plain';
    for (const r of d.records) {
      const li = el('li');
      li.appendChild(el('div', r.event + (r.by_ttl ? ' (time to live)' : '') + ' at ' + new Date(r.at_ms).toISOString() + ', sequence ' + r.seq));
      const img = r.new_image || r.old_image;
      if (img) li.appendChild(el('pre', JSON.stringify(plainFmt ? plainItem(img) : img, null, 2)));
      list.appendChild(li);
    }
    if (!d.records.length) list.appendChild(el('li', d.stream ? 'no records of this item in the stream' : 'the table has no stream'));
  }

  async function loadLocks() {
    const d = await get('/locks');
    state.locks = d.locks;
    if (!changed($('locks-list').tBodies[0], d.locks)) return;
    const rows = d.locks.map((l) => {
      const stateText = !l.held ? 'free' : l.past_due ? 'PAST DUE' : 'held';
      const tr = row([l.table, l.name, el('span', stateText, l.past_due ? 'state-due' : ''), l.holder, l.owner, l.fence,
        duration(l.lease_ms), duration(l.unchanged_ms) + (l.seen_change ? '' : ' (since first seen)'), attrText(l.value)]);
      if (l.past_due) tr.className = 'past-due';
      return tr;
    });
    if (!rows.length) rows.push(emptyRow($('locks-list').tBodies[0], 'no lock items'));
    fill($('locks-list').tBodies[0], rows);
  }

  function drawClock(c) {
    state.clock = c;
    const iso = new Date(c.now_ms).toISOString();
    $('clock-summary').textContent = 'clock: ' + iso + (c.fake ? ' (fake)' : ' (system)');
    $('clock-now').textContent = iso;
    $('clock-ms').textContent = String(c.now_ms);
    $('clock-mode').textContent = c.fake ? 'fake: moves only when told' : 'system';
    for (const b of document.querySelectorAll('#clock-buttons button, #advance-form button')) b.disabled = !c.fake;
    const lease = longestLease();
    $('advance-lease').textContent = lease ? 'Advance one lease (' + duration(lease) + ')' : 'Advance one lease';
    if (!lease) $('advance-lease').disabled = true;
  }

  function longestLease() {
    let m = 0;
    for (const l of state.locks) if (l.held && l.lease_ms > m) m = l.lease_ms;
    return m;
  }

  async function advance(ms) {
    try {
      drawClock(await change('POST', '/clock/advance', { ms }));
      status('');
      await refresh();
    } catch (e) { status(e.message); }
  }

  async function loadFaults() {
    const d = await get('/faults');
    $('faults-total').textContent = 'Faults fired since start: ' + d.fired_total;
    if (!changed($('faults-list').tBodies[0], d.faults)) return;
    const rows = d.faults.map((f) => {
      const b = el('button', 'Remove');
      b.type = 'button';
      b.setAttribute('aria-label', 'Remove fault ' + f.id);
      b.addEventListener('click', async () => {
        try { await change('DELETE', '/faults/' + f.id); await loadFaults(); } catch (e) { status(e.message); }
      });
      const detail = f.kind === 'error' ? f.error_type + ' (' + f.status + ')' : f.kind === 'delay' ? duration(f.delay_ms) : '';
      return row([f.id, f.kind, f.operation || 'any', f.table || 'any', f.count || 'every time', f.fired, detail, b]);
    });
    if (!rows.length) rows.push(emptyRow($('faults-list').tBodies[0], 'no faults'));
    fill($('faults-list').tBodies[0], rows);
  }

  // A long poll: fakedb answers as soon as a request was made after state.reqSeq (it
  // looks every 50 ms), or after 2 s with none (so that the rates fall to 0 when idle).
  async function loadRequests() {
    const d = await get('/requests?wait_ms=2000&after=' + state.reqSeq);
    state.reqSeq = d.seq;
    const t = performance.now();
    for (const r of d.requests) { r.at = t - r.age_ms; state.requests.push(r); }
    if (state.requests.length > MAX_REQUESTS) state.requests.splice(0, state.requests.length - MAX_REQUESTS);
    // rates over a second at least: a busy server answers the long poll every few ms
    if (state.lastTotals && d.mono_ms - state.lastMono < 1000) {
      drawRequests(d, t);
      return;
    }
    if (state.lastTotals) {
      const secs = (d.mono_ms - state.lastMono) / 1000;
      const rows = Object.keys(d.totals).sort().map((op) =>
        row([op, ((d.totals[op] - (state.lastTotals[op] || 0)) / secs).toFixed(1), d.totals[op]]));
      if (!rows.length) rows.push(emptyRow($('rates-list').tBodies[0], 'no requests yet'));
      fill($('rates-list').tBodies[0], rows);
    }
    state.lastTotals = d.totals;
    state.lastMono = d.mono_ms;
    drawRequests(d, t);
  }

  function drawRequests(d, t) {
    if (state.view !== 'requests' || (state.requestsDrawn && !d.requests.length)) return;
    state.requestsDrawn = true;
    const rows = [];
    for (let i = state.requests.length - 1; i >= 0; i--) {
      const r = state.requests[i];
      rows.push(row([r.seq, duration(Math.round(t - r.at)) + ' ago', r.operation, r.table, r.status || 'no answer',
        (r.latency_us / 1000).toFixed(2) + ' ms', r.error]));
    }
    if (!rows.length) rows.push(emptyRow($('requests-list').tBodies[0], 'no requests yet'));
    fill($('requests-list').tBodies[0], rows);
  }

  function pause(ms) { return new Promise((resolve) => setTimeout(resolve, ms)); }

  // The requests view follows fakedb live: one long poll after another, at most four a
  // second so that a busy server is not asked more often; a second's pause after an error.
  async function requestsLoop() {
    for (;;) {
      const start = performance.now();
      try {
        await loadRequests();
      } catch (e) {
        status('cannot reach fakedb: ' + e.message);
        await pause(1000);
      }
      const spent = performance.now() - start;
      if (spent < 250) await pause(250 - spent);
    }
  }

  let busy = false;
  async function refresh() {
    if (busy) return;
    busy = true;
    try {
      drawClock(await get('/clock'));
      if (state.view === 'locks' || state.view === 'clock') await loadLocks();
      if (state.view === 'clock') drawClock(state.clock);
      if (state.view === 'faults') await loadFaults();
      status('');
    } catch (e) {
      status('cannot reach fakedb: ' + e.message);
    } finally {
      busy = false;
    }
  }

  function init() {
    for (const b of document.querySelectorAll('.tab')) b.addEventListener('click', () => show(b.dataset.view));
    $('tables-refresh').addEventListener('click', () => loadTables().catch((e) => status(e.message)));
    $('items-form').addEventListener('submit', (ev) => {
      ev.preventDefault();
      state.start = null;
      loadItems().catch((e) => status(e.message));
    });
    $('items-format').addEventListener('change', () => loadItems().catch((e) => status(e.message)));
    $('items-next').addEventListener('click', () => {
      state.start = state.next;
      loadItems().catch((e) => status(e.message));
    });
    $('advance-1s').addEventListener('click', () => advance(1000));
    $('advance-lease').addEventListener('click', () => { const l = longestLease(); if (l) advance(l); });
    $('advance-form').addEventListener('submit', (ev) => {
      ev.preventDefault();
      const ms = parseDuration($('advance-by').value);
      if (ms === null) { status('a duration is a number with ms, s, m, h or d'); return; }
      advance(ms);
    });
    $('fault-form').addEventListener('submit', async (ev) => {
      ev.preventDefault();
      const f = { kind: $('fault-kind').value, count: parseInt($('fault-count').value || '0', 10) };
      if ($('fault-operation').value) f.operation = $('fault-operation').value;
      if ($('fault-table').value) f.table = $('fault-table').value;
      if (f.kind === 'error' && $('fault-error').value) f.error_type = $('fault-error').value;
      if (f.kind === 'delay') f.delay_ms = parseInt($('fault-delay').value || '0', 10);
      try { await change('POST', '/faults', f); await loadFaults(); status(''); } catch (e) { status(e.message); }
    });
    const want = (location.hash || '').slice(1);
    show(['tables', 'locks', 'clock', 'faults', 'requests'].includes(want) ? want : 'tables');
    loadTables().catch((e) => status(e.message));
    setInterval(refresh, 1000);
    requestsLoop();
  }

  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', init); else init();
}());
