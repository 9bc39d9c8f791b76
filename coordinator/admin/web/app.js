// groupcoord live page: plain JS, no framework, no build.
// Loads /api/nodes, /api/topics, /api/groups, /api/events/recent, follows the SSE stream
// /api/events/stream, re-fetches the selected group's detail (debounced) on its events, and
// draws each group's rebalances as an SVG timeline built from the coordinator's events.
// Consumer groups of the new protocol (KIP-848) show their group and assignment epochs, each member's
// epochs and reconciliation state, and its target assignment against what it owns. Share groups
// (KIP-932) show their group epochs, their members sharing partitions and the records each holds, and
// each share-partition's in-flight records by state (SPSO to SPEO), delivery counts and holders.
// Transactions: the open ones (/api/transactions, re-read on the transaction.* events) with their age
// against their timeout, partitions and pending offsets, and the last ones completed or fenced.
"use strict";

(() => {
  const STATES = ["Empty", "PreparingRebalance", "CompletingRebalance", "Stable", "Dead", "Assigning", "Reconciling"];
  const REBALANCING = new Set(["PreparingRebalance", "CompletingRebalance", "Assigning", "Reconciling"]);
  const JOINS = new Set(["member.joined", "member.replaced", "consumer.member_joined", "consumer.member_replaced",
                         "share.member_joined"]);
  const LEAVES = new Set(["member.left", "member.removed", "member.expired", "consumer.member_left",
                          "consumer.member_fenced", "share.member_left", "share.member_fenced"]);
  const EPOCH_BUMPS = new Set(["consumer.group_epoch_bumped", "share.group_epoch_bumped"]);
  const TIMELINE_EVENTS = new Set([
    "group.created", "group.deleted", "group.state_change", "rebalance.started", "rebalance.completed",
    ...EPOCH_BUMPS, ...JOINS, ...LEAVES,
  ]);
  // the share-partition leaders' events: per request, they only make the page read the group again
  const SHARE_RECORD_EVENTS = new Set(["share.session_opened", "share.session_closed", "share.records_acquired",
                                       "share.records_acknowledged", "share.lock_expired", "share.records_archived"]);
  const RECORD_STATES = ["available", "acquired", "acknowledged", "archived"];
  const EVENT_TYPES = [
    "group.created", "group.state_change", "group.deleted", "group.leader_changed", "member.pending",
    "member.joined", "member.replaced", "member.left", "member.removed", "member.expired",
    "rebalance.started", "rebalance.join_completed", "group.sync_completed", "rebalance.completed",
    "offset.committed", "offsets.expired", "offsets.deleted", "consumer.group_epoch_bumped",
    "consumer.member_joined", "consumer.member_replaced", "consumer.member_left", "consumer.member_fenced",
    "share.member_joined", "share.member_left", "share.member_fenced", "share.group_epoch_bumped",
    ...SHARE_RECORD_EVENTS, "offsets.transactional_commit", "offsets.transaction_committed",
    "offsets.transaction_aborted", "transaction.producer_initialized", "transaction.partitions_added",
    "transaction.prepared", "transaction.completed", "transaction.fenced",
  ];
  // the transaction coordinator's states a transaction is open in
  const OPEN_TXN_STATES = new Set(["Ongoing", "PrepareCommit", "PrepareAbort", "PrepareEpochFence"]);
  const TXN_ENDED = "transaction.completed,transaction.fenced";
  const MAX_TXN_RECENT = 12;       // completed or fenced transactions listed
  // Kafka's MemberState of a consumer group's member, as the page words it
  const MEMBER_STATES = {
    stable: "stable", unrevoked_partitions: "revoking", unreleased_partitions: "waiting for partitions",
    unknown: "unknown",
  };
  const MAX_GROUP_EVENTS = 3000;   // per group, for its timeline
  const HISTORY_EVENTS = 5000;     // events loaded at start (and after a reconnection)
  const MAX_SEEN = 20000;          // de-duplication keys kept
  const TIMELINE_GENERATIONS = 10; // the timeline shows the last N rebalances
  const POLL_MS = 3000;            // nodes, topics, groups and the selected group's offsets
  const SVGNS = "http://www.w3.org/2000/svg";

  const S = {
    nodes: null,
    topics: null,
    groups: new Map(),     // group id -> summary (GET /api/groups, then updated by events)
    selected: null,
    detail: null,          // GET /api/groups/{selected}
    events: new Map(),     // group id -> timeline events, oldest first
    owners: new Map(),     // group id -> Map(generation -> Map("topic\u0000p" -> member id)), seen Stable
    clients: new Map(),    // member id -> client id (from member.joined and details)
    seen: new Set(),
    seenOrder: [],
    skew: null,            // coordinator clock minus browser clock (ms), estimated from live events
    lastTs: 0,
    buffering: true,       // live events wait until the history is loaded
    buffer: [],
    txns: null,            // GET /api/transactions
    txnsAt: 0,             // performance.now() when it was read
    txnRecent: [],         // transaction.completed and transaction.fenced events, newest first
  };

  const $ = (id) => document.getElementById(id);
  const setText = (node, text) => { if (node.textContent !== text) node.textContent = text; };

  // ---------------------------------------------------------------- DOM helpers

  function fill(node, attrs, kids) {
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      node.setAttribute(k, v === true ? "" : String(v));
    }
    for (const kid of kids.flat()) {
      if (kid === null || kid === undefined || kid === false) continue;
      node.append(kid instanceof Node ? kid : document.createTextNode(String(kid)));
    }
    return node;
  }
  const h = (tag, attrs, ...kids) => fill(document.createElement(tag), attrs, kids);
  const s = (tag, attrs, ...kids) => fill(document.createElementNS(SVGNS, tag), attrs, kids);

  // ---------------------------------------------------------------- formatting

  function fmtMs(ms) {
    if (ms === null || ms === undefined) return "–";
    if (ms < 1000) return `${Math.round(ms)} ms`;
    if (ms < 60000) return `${(ms / 1000).toFixed(ms < 10000 ? 2 : 1)} s`;
    const m = Math.floor(ms / 60000);
    return `${m} min ${Math.round((ms % 60000) / 1000)} s`;
  }

  function fmtClock(ts, millis) {
    const d = new Date(ts);
    const p = (n, w = 2) => String(n).padStart(w, "0");
    const base = `${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
    return millis ? `${base}.${p(d.getMilliseconds(), 3)}` : base;
  }

  const fmtInt = (n) => (n === null || n === undefined ? "–" : Number(n).toLocaleString("en-US"));

  // "rdkafka-1b2c3d4e-...-uuid" -> "rdkafka-1b2c3d"
  function shortMember(id) {
    if (!id) return "–";
    const m = /^(.*)-([0-9a-f]{8})-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.exec(id);
    return m ? `${m[1]}-${m[2].slice(0, 6)}` : id;
  }

  const tpKey = (topic, partition) => `${topic}\u0000${partition}`;

  // ---------------------------------------------------------------- HTTP

  class HttpError extends Error {
    constructor(status, message) { super(message); this.status = status; }
  }

  async function getJSON(url) {
    const r = await fetch(url, { headers: { Accept: "application/json" }, cache: "no-store" });
    if (!r.ok) {
      let message = `${r.status} ${r.statusText}`;
      try { const body = await r.json(); if (body && body.message) message = body.message; } catch (_) { /* not JSON */ }
      throw new HttpError(r.status, `${url}: ${message}`);
    }
    return r.json();
  }

  const problems = new Map();   // source -> message
  function problem(source, err) {
    if (err) problems.set(source, err.message || String(err)); else problems.delete(source);
    const box = $("notice");
    box.hidden = problems.size === 0;
    box.textContent = [...problems.values()].join(" · ");
  }

  async function load(source, url, apply) {
    try {
      apply(await getJSON(url));
      problem(source, null);
    } catch (err) {
      problem(source, err);
    }
  }

  const loadNodes = () => load("nodes", "/api/nodes", (v) => { S.nodes = v; });
  const loadTransactions = () => load("transactions", "/api/transactions", (v) => { S.txns = v; S.txnsAt = performance.now(); });
  const loadTxnHistory = () => load("transactions", `/api/events/recent?limit=${MAX_TXN_RECENT}&type=${TXN_ENDED}`,
                                    (list) => { for (const ev of list) ingest(ev, false); });

  // transactions change by the event: re-read them soon after, at most a few times a second
  let txnTimer = null;
  function scheduleTransactions() {
    if (txnTimer !== null) return;
    txnTimer = setTimeout(() => { txnTimer = null; loadTransactions().then(render); }, 150);
  }
  const loadTopics = () => load("topics", "/api/topics", (v) => { S.topics = v; });

  function loadGroups() {
    const asked = performance.now();
    return load("groups", "/api/groups", (list) => {
      const fresh = new Map();
      for (const g of list) {
        const old = S.groups.get(g.group_id);
        // an event that arrived while the request was out is newer than the answer
        if (old && old._evAt && old._evAt > asked) {
          Object.assign(g, { state: old.state, generation: old.generation, members: old.members, _evAt: old._evAt });
        }
        fresh.set(g.group_id, g);
      }
      for (const [id, old] of S.groups) {  // created by an event the listing has not caught up with
        if (!fresh.has(id) && old._evAt && old._evAt > asked) fresh.set(id, old);
      }
      S.groups = fresh;
    });
  }

  // the groups' rebalance history (the service keeps it across restarts when it has a data dir);
  // offset commits and share records, many more, would crowd it out of the answer
  const HISTORY_TYPES = "group.,rebalance.,member.,consumer.,share.member_,share.group_epoch_bumped";
  function loadHistory() {
    return load("events", `/api/events/recent?limit=${HISTORY_EVENTS}&type=${HISTORY_TYPES}`, (list) => {
      for (const ev of list) ingest(ev, false);
    });
  }

  // ---------------------------------------------------------------- the selected group's detail

  let detailTimer = null;
  let detailBusy = false;
  let detailAgain = false;

  function scheduleDetail(delay) {
    if (!S.selected) return;
    if (detailBusy) { detailAgain = true; return; }
    if (detailTimer !== null) return;
    detailTimer = setTimeout(fetchDetail, delay);
  }

  async function fetchDetail() {
    detailTimer = null;
    const id = S.selected;
    if (!id) return;
    const summary = S.groups.get(id);
    if (!summary || summary.state === "Dead") return;   // not known (yet): no 404 in the console
    detailBusy = true;
    try {
      const d = await getJSON(`/api/groups/${encodeURIComponent(id)}`);
      if (id === S.selected) {
        S.detail = d;
        remember(d);
      }
      problem("detail", null);
    } catch (err) {
      if (err.status === 404 && id === S.selected) S.detail = null;
      else problem("detail", err);
    } finally {
      detailBusy = false;
      if (detailAgain) { detailAgain = false; scheduleDetail(60); }
      render();
    }
  }

  // keeps who owned which partition in each Stable generation, to show moved partitions
  function remember(d) {
    for (const m of d.members || []) if (m.client_id) S.clients.set(m.member_id, m.client_id);
    if (d.state !== "Stable") return;
    let gens = S.owners.get(d.group_id);
    if (!gens) S.owners.set(d.group_id, gens = new Map());
    const owner = new Map();
    for (const m of d.members || []) {
      for (const tp of (m.assignment && m.assignment.partitions) || []) owner.set(tpKey(tp.topic, tp.partition), m.member_id);
    }
    gens.set(d.generation, owner);
    if (gens.size > 50) gens.delete(Math.min(...gens.keys()));
  }

  // partition -> previous owner, for partitions whose owner changed in `generation`
  function movedIn(groupId, generation) {
    const gens = S.owners.get(groupId);
    const now = gens && gens.get(generation);
    const moved = new Map();
    if (!now) return moved;
    const earlier = [...gens.keys()].filter((g) => g < generation).sort((a, b) => b - a);
    if (!earlier.length) return moved;
    for (const [key, member] of now) {
      for (const g of earlier) {       // the last known owner (cooperative: may be generations back)
        const before = gens.get(g).get(key);
        if (before === undefined) continue;
        if (before !== member) moved.set(key, before);
        break;
      }
    }
    return moved;
  }

  // ---------------------------------------------------------------- events

  function serverNow() {
    const now = Date.now() + (S.skew === null ? 0 : S.skew);
    return Math.max(now, S.lastTs);
  }

  function ingest(ev, live) {
    if (!ev || typeof ev !== "object" || !ev.event) return;
    const key = JSON.stringify(ev);
    if (S.seen.has(key)) return;
    S.seen.add(key);
    S.seenOrder.push(key);
    if (S.seenOrder.length > MAX_SEEN) S.seen.delete(S.seenOrder.shift());

    if (live && typeof ev.ts_ms === "number") {
      const skew = ev.ts_ms - Date.now();   // an event is seen after it happened: a lower bound
      S.skew = S.skew === null ? skew : Math.max(S.skew, skew);
    }
    if (typeof ev.ts_ms === "number") S.lastTs = Math.max(S.lastTs, ev.ts_ms);
    if (ev.event.startsWith("transaction.")) {
      if (ev.event === "transaction.completed" || ev.event === "transaction.fenced") {
        S.txnRecent.unshift(ev);
        S.txnRecent.sort((a, b) => b.ts_ms - a.ts_ms);
        if (S.txnRecent.length > MAX_TXN_RECENT) S.txnRecent.length = MAX_TXN_RECENT;
      }
      if (live) { scheduleTransactions(); render(); }
      return;
    }
    if (live && ev.event.startsWith("offsets.transaction")) scheduleTransactions();   // pending offsets
    const id = ev.group;
    if (typeof id !== "string") return;

    if (live) {
      let g = S.groups.get(id);
      if (!g) {
        g = { group_id: id, protocol_type: ev.protocol_type || null, protocol: null, leader: null, coordinator: null };
        S.groups.set(id, g);
      }
      if (ev.event.startsWith("consumer.") || ev.cause === "consumer_group_heartbeat" || ev.cause === "upgrade") {
        g.type = "consumer";
      }
      else if (ev.event.startsWith("share.") || ev.cause === "share_group_heartbeat") g.type = "share";
      else if (ev.event === "group.created") g.type = "classic";
      g.state = ev.event === "group.deleted" ? "Dead" : ev.state;
      g.generation = ev.generation;
      g.members = ev.members;
      if (ev.event === "rebalance.completed") { g.protocol = ev.protocol; g.leader = ev.leader; }
      g._evAt = performance.now();
    }
    if ((ev.event === "member.joined" || ev.event === "consumer.member_joined" || ev.event === "share.member_joined") &&
        ev.client_id) {
      S.clients.set(ev.member, ev.client_id);
    }

    if (TIMELINE_EVENTS.has(ev.event)) {
      let list = S.events.get(id);
      if (!list) S.events.set(id, list = []);
      list.push(ev);
      if (list.length > MAX_GROUP_EVENTS) list.splice(0, list.length - MAX_GROUP_EVENTS);
    }
    if (live) {
      if (!S.selected) select(id, false);
      else if (id === S.selected) {
        scheduleDetail(ev.event === "offset.committed" || SHARE_RECORD_EVENTS.has(ev.event) ? 400 : 120);
      }
      render();
    }
  }

  let stream = null;
  let streamFailed = false;

  function setConnection(kind, label) {
    const c = $("connection");
    c.dataset.connection = kind;
    c.querySelector(".label").textContent = label;
  }

  function onMessage(msg) {
    let ev;
    try { ev = JSON.parse(msg.data); } catch (_) { return; }
    if (S.buffering) S.buffer.push(ev); else ingest(ev, true);
  }

  function connect() {
    stream = new EventSource("/api/events/stream");
    stream.addEventListener("message", onMessage);
    for (const type of EVENT_TYPES) stream.addEventListener(type, onMessage);  // if sent as named events
    stream.addEventListener("open", () => {
      setConnection("live", "live");
      if (streamFailed) { streamFailed = false; resync(); }
    });
    stream.addEventListener("error", () => {
      streamFailed = true;
      if (stream.readyState === EventSource.CLOSED) {
        setConnection("error", "disconnected, retrying…");
        stream = null;
        setTimeout(connect, 3000);
      } else {
        setConnection("reconnecting", "reconnecting…");
      }
    });
  }

  async function resync() {
    S.buffering = true;
    await Promise.all([loadNodes(), loadTopics(), loadGroups(), loadHistory(), loadTransactions(), loadTxnHistory()]);
    S.buffering = false;
    const pending = S.buffer.splice(0);
    for (const ev of pending) ingest(ev, true);
    if (!S.selected) {
      const first = [...S.groups.keys()].sort()[0];
      if (first) select(first, false);
    }
    scheduleDetail(0);
    render();
  }

  // ---------------------------------------------------------------- selection

  function groupFromHash() {
    const m = /^#group=(.*)$/.exec(location.hash);
    if (!m) return null;
    try { return decodeURIComponent(m[1]); } catch (_) { return null; }
  }

  function select(id, byUser) {
    if (id === S.selected) return;
    S.selected = id;
    S.detail = null;
    const hash = `#group=${encodeURIComponent(id)}`;
    if (location.hash !== hash) history.replaceState(null, "", hash);
    if (detailTimer !== null) { clearTimeout(detailTimer); detailTimer = null; }
    scheduleDetail(0);
    render();
    if (byUser) $("main").focus({ preventScroll: true });
  }

  // ---------------------------------------------------------------- timeline model

  // bars (one per rebalance, labelled with the generation it produced), state spans and
  // join/leave markers of one group, from its events. A consumer group's rebalance starts at a
  // bump of its group epoch and ends when the group is Stable (or Empty) again; bumps meanwhile
  // are its rounds.
  function timelineModel(events, now) {
    const list = events.slice().sort((a, b) => a.ts_ms - b.ts_ms);
    const bars = [];
    const spans = [];
    const marks = [];
    let open = null;
    let pending = { joined: [], left: [] };
    let lastChange = null;

    const settle = (ts, generation, outcome, members) => {
      Object.assign(open, { end: ts, duration: ts - open.start, generation, outcome, members,
                            joined: pending.joined, left: pending.left });
      bars.push(open);
      pending = { joined: [], left: [] };
      open = null;
    };

    for (const ev of list) {
      switch (ev.event) {
        case "consumer.group_epoch_bumped":
        case "share.group_epoch_bumped":
          if (!open) {
            open = { start: ev.ts_ms, end: null, reason: ev.reason, member: ev.member, rounds: 1,
                     generation: null, consumer: true };
          } else {
            open.rounds += 1;
          }
          open.epoch = ev.generation;
          break;
        case "rebalance.started":
          if (!open || ev.round === 1) {
            open = { start: ev.ts_ms, end: null, reason: ev.reason, member: ev.member, rounds: ev.round,
                     initial: ev.initial, delay: ev.delay_ms, generation: null };
          } else {
            open.rounds = ev.round;
          }
          break;
        case "rebalance.completed": {
          const bar = open || { start: ev.ts_ms - ev.duration_ms, reason: null, member: null, rounds: ev.rounds };
          Object.assign(bar, { end: ev.ts_ms, duration: ev.duration_ms, generation: ev.generation,
                               outcome: ev.outcome, leader: ev.leader, protocol: ev.protocol,
                               members: ev.members, rounds: ev.rounds,
                               joined: pending.joined, left: pending.left });
          bars.push(bar);
          pending = { joined: [], left: [] };
          open = null;
          break;
        }
        case "group.state_change":
          spans.push({ state: ev.state_from, start: ev.ts_ms - ev.duration_ms, end: ev.ts_ms });
          lastChange = { state: ev.state_to, start: ev.ts_ms };
          if (open && open.consumer && (ev.state_to === "Stable" || ev.state_to === "Empty")) {
            settle(ev.ts_ms, ev.generation, ev.state_to, ev.members);
          }
          break;
        case "group.deleted":
          lastChange = { state: "Dead", start: ev.ts_ms };
          break;
        default:
          if (JOINS.has(ev.event)) {
            const m = { ts: ev.ts_ms, kind: "join", event: ev.event, member: ev.member, instance: ev.instance_id,
                        client: ev.client_id || S.clients.get(ev.member) || null, reason: ev.reason };
            marks.push(m);
            pending.joined.push(m);
          } else if (LEAVES.has(ev.event)) {
            if (ev.pending) break;   // a KIP-394 id that never joined
            const m = { ts: ev.ts_ms, kind: "leave", event: ev.event, member: ev.member, instance: ev.instance_id,
                        client: S.clients.get(ev.member) || null, reason: ev.static ? "static, for now" : ev.reason };
            marks.push(m);
            pending.left.push(m);
          }
      }
    }
    // a consumer group's epoch bumped without leaving Stable (one member changing its subscription)
    const last = list[list.length - 1];
    if (open && open.consumer && last && (last.state === "Stable" || last.state === "Empty")) {
      settle(last.ts_ms, open.epoch, last.state, last.members);
    }
    if (open) {
      Object.assign(open, { end: now, duration: now - open.start, open: true,
                            joined: pending.joined, left: pending.left });
      bars.push(open);
    }
    if (lastChange) spans.push({ state: lastChange.state, start: lastChange.start, end: now, current: true });
    return { bars, spans, marks };
  }

  const TICKS = [50, 100, 250, 500, 1000, 2000, 5000, 10000, 15000, 30000, 60000, 120000, 300000,
                 600000, 900000, 1800000, 3600000, 7200000, 21600000, 43200000, 86400000];

  function drawTimeline(groupId) {
    const box = $("timeline");
    const now = serverNow();
    const model = timelineModel(S.events.get(groupId) || [], now);
    const width = Math.max(560, Math.round(box.clientWidth || 900));
    const L = 92, R = 18;
    const H = 160;
    const root = s("svg", { viewBox: `0 0 ${width} ${H}`, width, height: H, role: "img",
                            "aria-labelledby": "timeline-title", "data-group": groupId });
    const title = s("title", { id: "timeline-title" });
    root.append(title);

    const shown = model.bars.slice(-TIMELINE_GENERATIONS);
    if (!shown.length && !model.spans.length && !model.marks.length) {
      title.textContent = "No rebalance seen yet";
      root.append(s("text", { x: width / 2, y: H / 2, "text-anchor": "middle", class: "none" },
                    "No rebalance seen yet: the timeline starts with the group's next events."));
      box.replaceChildren(root);
      return;
    }
    let t0 = shown.length ? shown[0].start : Infinity;
    if (!shown.length) {
      for (const sp of model.spans) t0 = Math.min(t0, sp.start);
      for (const m of model.marks) t0 = Math.min(t0, m.ts);
    }
    let t1 = now;
    const span0 = Math.max(t1 - t0, 1000);
    t0 -= span0 * 0.04;
    t1 += span0 * 0.015;
    const x = (t) => L + ((t - t0) / (t1 - t0)) * (width - L - R);

    const Y = { bar: 22, barH: 22, state: 58, stateH: 12, marks: 92, axis: 134 };   // marks: MARK_ROWS rows

    // lane labels
    root.append(
      s("text", { x: 0, y: Y.bar + 15, class: "lane-label" }, "rebalances"),
      s("text", { x: 0, y: Y.state + 10, class: "lane-label" }, "state"),
      s("text", { x: 0, y: Y.marks + 4, class: "lane-label" }, "members"));

    // axis and ticks
    const axis = s("g", { class: "axis" });
    axis.append(s("line", { x1: L, x2: width - R, y1: Y.axis, y2: Y.axis }));
    const range = t1 - t0;
    const step = TICKS.find((t) => range / t <= 7) || TICKS[TICKS.length - 1];
    for (let t = Math.ceil(t0 / step) * step; t <= t1; t += step) {
      const tx = x(t);
      axis.append(s("line", { x1: tx, x2: tx, y1: Y.axis, y2: Y.axis + 4 }),
                  s("line", { x1: tx, x2: tx, y1: 6, y2: Y.axis, "stroke-opacity": 0.35 }),
                  s("text", { x: tx, y: Y.axis + 16, "text-anchor": "middle" }, fmtClock(t, step < 1000)));
    }
    root.append(axis);

    // state lane
    const lane = s("g", { class: "states" });
    for (const sp of model.spans) {
      const a = Math.max(x(sp.start), L), b = Math.min(x(sp.end), width - R);
      if (b <= L || a >= width - R) continue;
      const r = s("rect", { x: a, y: Y.state, width: Math.max(b - a, 1), height: Y.stateH,
                            class: `span st-${sp.state}`, "data-state": sp.state });
      r.append(s("title", {}, `${sp.state} from ${fmtClock(sp.start, true)}${sp.current ? " (now)" : ` for ${fmtMs(sp.end - sp.start)}`}`));
      lane.append(r);
    }
    root.append(lane);

    // generation bars: segments coloured by the states inside the rebalance
    const barsG = s("g", { class: "bars" });
    let labelLeft = Infinity;   // labels placed newest first, right to left, without overlap
    for (let i = shown.length - 1; i >= 0; i--) {
      const bar = shown[i];
      const a = x(bar.start);
      const w = Math.max(x(bar.end) - a, 3);
      const g = s("g", { class: "bar", "data-generation": bar.open ? null : bar.generation,
                         "data-duration-ms": Math.round(bar.duration), "data-open": bar.open ? "true" : null });
      const label = bar.open ? "rebalancing…" : `${bar.consumer ? "group epoch" : "generation"} ${bar.generation}`;
      g.append(s("title", {}, `${label}: ${bar.open ? "running for" : "took"} ${fmtMs(bar.duration)}` +
                 `${bar.reason ? `, reason ${bar.reason}` : ""}${bar.rounds > 1 ? `, ${bar.rounds} rounds` : ""}` +
                 `${bar.joined.length ? `, joined: ${bar.joined.map(markName).join(", ")}` : ""}` +
                 `${bar.left.length ? `, left: ${bar.left.map(markName).join(", ")}` : ""}`));
      const segs = model.spans.filter((sp) => sp.end > bar.start && sp.start < bar.end && REBALANCING.has(sp.state));
      if (!segs.length) segs.push({ state: bar.consumer ? "Reconciling" : "PreparingRebalance", start: bar.start, end: bar.end });
      for (const sp of segs) {
        const sa = Math.max(x(sp.start), a), sb = Math.min(x(sp.end), a + w);
        g.append(s("rect", { x: sa, y: Y.bar, width: Math.max(sb - sa, w <= 3 ? w : 0.5), height: Y.barH,
                             class: `seg st-${sp.state}` }));
      }
      g.append(s("rect", { x: a, y: Y.bar, width: w, height: Y.barH, rx: 2, class: "frame" }));
      const text = bar.open ? "rebalancing" : `${bar.consumer ? "epoch" : "gen"} ${bar.generation}`;
      const dur = fmtMs(bar.duration);
      const textW = Math.max(text.length, dur.length) * 6.6 + 6;
      const inside = `${text} · ${dur}`;
      if (w >= inside.length * 6.6 + 12) {   // wide enough: one line inside the bar
        g.append(s("text", { x: a + 6, y: Y.bar + 15, class: "inside" }, inside));
        labelLeft = a - 2;
        barsG.append(g);
        continue;
      }
      const tx = a + w + 4;
      if (tx + textW <= labelLeft && tx + textW <= width) {
        g.append(s("text", { x: tx, y: Y.bar + 9 }, text), s("text", { x: tx, y: Y.bar + 21, class: "dur" }, dur));
        labelLeft = a - 2;
      } else {
        labelLeft = Math.min(labelLeft, a - 2);
      }
      barsG.append(g);
    }
    root.append(barsG);

    root.append(drawMarks(model.marks.filter((m) => m.ts >= t0), x, Y.marks, L, width - R));

    const last = shown[shown.length - 1];
    title.textContent = last ? `Rebalance timeline of ${groupId}: ${shown.length} shown, latest ` +
      `${last.open ? "still running" : `${last.consumer ? "group epoch" : "generation"} ${last.generation} took ` +
        fmtMs(last.duration)}` : `Timeline of ${groupId}`;
    box.replaceChildren(root);
  }

  // The members lane: a marker per join or leave. A mark that would sit under the label of the
  // last cluster of its kind joins that cluster, so clusters of one kind never overlap; a cluster
  // is labelled with its member's name, or "3 joined" (its tooltip names them all). Each cluster
  // takes the first row where neither its markers nor its label run into another's: two rows are
  // enough (joins, leaves) but where labels turn left at the right edge, hence a third. A label
  // that fits in no row is left out (the markers' tooltips still say it all): labels never overlap.
  const MARK_ROWS = 3;
  const MARK_ROW_H = 14;        // a label's box is about 12 px high at MARK_FONT_PX
  const MARK_FONT_PX = 10.5;
  const MARK_GAP = 6;           // between one cluster's extent and the next in a row

  function markClusters(marks, x, font) {
    const clusters = [];
    const last = { join: null, leave: null };
    for (const m of marks) {      // oldest first
      const mx = x(m.ts);
      const c = last[m.kind];
      if (c && mx - 6 < c.x1 + 8 + textWidth(clusterLabel(c), font) + MARK_GAP) {
        c.marks.push(m);
        c.x1 = mx;
      } else {
        clusters.push(last[m.kind] = { kind: m.kind, x0: mx, x1: mx, marks: [m] });
      }
    }
    return clusters;
  }

  function clusterLabel(c) {
    if (c.marks.length === 1) return markName(c.marks[0]);
    return `${c.marks.length} ${c.kind === "join" ? "joined" : "left"}`;
  }

  function clusterTitle(c) {
    const first = c.marks[0], last = c.marks[c.marks.length - 1];
    const when = first.ts === last.ts ? fmtClock(first.ts, true) : `${fmtClock(first.ts, true)} – ${fmtClock(last.ts, true)}`;
    const names = c.marks.map((m) => markName(m) + (m.reason ? ` (${m.reason})` : "")).join(", ");
    return `${c.marks.length} ${c.kind === "join" ? "joined" : "left"} at ${when}: ${names}`;
  }

  let measurer = null;
  function textWidth(text, font) {
    if (!measurer) measurer = document.createElement("canvas").getContext("2d");
    measurer.font = font;
    return measurer.measureText(text).width;
  }

  function drawMarks(marks, x, top, left, right) {
    const lane = s("g", { class: "marks" });
    const font = `${MARK_FONT_PX}px ${getComputedStyle($("timeline")).fontFamily}`;
    const taken = Array.from({ length: MARK_ROWS }, () => []);   // per row: [from, to] extents
    const fits = (row, from, to) => taken[row].every(([a, b]) => to + MARK_GAP <= a || from >= b + MARK_GAP);
    for (const c of markClusters(marks, x, font)) {
      const markers = [c.x0 - 6, c.x1 + 6];
      const text = clusterLabel(c);
      const w = textWidth(text, font);
      // the label right of its markers, or left of them where it would run past the right edge
      const at = c.x1 + 8 + w <= right ? c.x1 + 8 : c.x0 - 8 - w;
      const extent = [Math.min(markers[0], at), Math.max(markers[1], at + w)];
      let row = at >= left ? taken.findIndex((_, r) => fits(r, ...extent)) : -1;
      const labelled = row >= 0;
      if (!labelled) {
        row = taken.findIndex((_, r) => fits(r, ...markers));
        if (row < 0) row = MARK_ROWS - 1;      // markers may overlap then, labels never
      }
      taken[row].push(labelled ? extent : markers);

      const y = top + row * MARK_ROW_H;
      const g = s("g", { class: `cluster ${c.kind}`, "data-kind": c.kind, "data-count": c.marks.length,
                         "data-labelled": labelled ? "true" : "false" });
      for (const m of c.marks) {
        const mx = x(m.ts);
        const d = m.kind === "join" ? `M${mx - 5},${y + 4} L${mx + 5},${y + 4} L${mx},${y - 5} Z`
                                    : `M${mx - 5},${y - 4} L${mx + 5},${y - 4} L${mx},${y + 5} Z`;
        g.append(s("g", { class: `marker ${m.kind}`, "data-member": m.member, "data-kind": m.event },
          s("path", { d }),
          s("title", {}, `${m.event} ${markName(m)}${m.reason ? ` (${m.reason})` : ""} at ${fmtClock(m.ts, true)}`)));
      }
      if (labelled) {
        g.append(s("g", { class: "label" }, s("title", {}, clusterTitle(c)),
                   s("text", { x: at, y: y + 4, class: "mark-label", "font-size": MARK_FONT_PX }, text)));
      }
      lane.append(g);
    }
    return lane;
  }

  function markName(m) {
    const client = m.client || S.clients.get(m.member);
    const short = shortMember(m.member);
    return client && !short.startsWith(client) ? `${client} (${short})` : short;
  }

  // ---------------------------------------------------------------- rendering

  // at most one render per frame and about ten a second, however fast the events come
  let renderQueued = false;
  let renderedAt = 0;
  function render() {
    if (renderQueued) return;
    renderQueued = true;
    setTimeout(() => requestAnimationFrame(() => {
      renderQueued = false;
      renderedAt = performance.now();
      renderNow();
    }), Math.max(0, 100 - (performance.now() - renderedAt)));
  }

  function renderNow() {
    renderCluster();
    renderGroups();
    renderNodes();
    renderTopics();
    renderGroup();
    renderTransactions();
  }

  function renderCluster() {
    const parts = [];
    if (S.nodes) {
      const up = S.nodes.filter((n) => n.up).length;
      parts.push(`${S.nodes.length} node${S.nodes.length === 1 ? "" : "s"}${up < S.nodes.length ? ` (${S.nodes.length - up} down)` : ""}`);
    }
    if (S.topics) {
      const t = S.topics.filter((x) => !x.internal).length;
      parts.push(`${t} topic${t === 1 ? "" : "s"}`);
    }
    parts.push(`${S.groups.size} group${S.groups.size === 1 ? "" : "s"}`);
    const open = (S.txns || []).filter((t) => OPEN_TXN_STATES.has(t.state)).length;
    if (open) parts.push(`${open} open transaction${open === 1 ? "" : "s"}`);
    setText($("cluster-summary"), parts.join(" · "));   // a live region: only real changes
  }

  const groupItems = new Map();   // group id -> <li>, kept so that focus survives updates

  function renderGroups() {
    const list = $("group-list");
    const ids = [...S.groups.keys()].sort();
    $("groups-count").textContent = ids.length ? `(${ids.length})` : "";
    $("groups-empty").hidden = ids.length > 0;
    for (const [id, li] of groupItems) if (!S.groups.has(id)) { li.remove(); groupItems.delete(id); }
    ids.forEach((id, i) => {
      const g = S.groups.get(id);
      let li = groupItems.get(id);
      if (!li) {
        li = h("li", {}, h("button", { type: "button" }));
        li.firstChild.addEventListener("click", () => select(id, true));
        groupItems.set(id, li);
      }
      const b = li.firstChild;
      const state = STATES.includes(g.state) ? g.state : "Empty";
      const modern = g.type === "consumer" || g.type === "share";   // group epochs, a type tag
      li.dataset.group = id;
      li.dataset.state = g.state;
      li.dataset.generation = g.generation;
      li.dataset.type = g.type || "";
      b.setAttribute("aria-current", id === S.selected ? "true" : "false");
      b.setAttribute("aria-label", `${id}: ${modern ? `${g.type} group, ` : ""}${g.state}, ` +
                     `${modern ? "group epoch" : "generation"} ${g.generation}, ${g.members} members`);
      const tag = !modern ? null : g.type === "share"
        ? h("span", { class: "type-tag", title: "share group (KIP-932)" }, "share")
        : h("span", { class: "type-tag", title: "consumer group (KIP-848)" }, "consumer");
      b.replaceChildren(
        h("span", { class: `state-dot st-${state}`, "aria-hidden": "true" }),
        h("span", { class: "name", title: id }, id),
        h("span", { class: "gen" }, `${modern ? "epoch" : "gen"} ${g.generation}`),
        h("span", { class: "meta" }, tag, `${g.state} · ${g.members} member${g.members === 1 ? "" : "s"}`));
      if (list.children[i] !== li) list.insertBefore(li, list.children[i] || null);
    });
  }

  function renderNodes() {
    const list = $("node-list");
    if (!S.nodes) { list.replaceChildren(h("li", { class: "empty" }, "–")); return; }
    list.replaceChildren(...S.nodes.map((n) => h("li", { "data-node": n.node_id, "data-up": n.up ? "true" : "false",
                                                       title: `${(n.offsets_partitions || []).length} offsets partitions led` },
      h("span", { class: "who" }, h("span", {}, `node ${n.node_id}${n.rack ? ` · ${n.rack}` : ""}`),
        h("span", { class: "addr" }, `${n.host}:${n.port}`)),
      h("span", { class: n.up ? "up" : "down" }, n.up ? "up" : "down"))));
  }

  function renderTopics() {
    const list = $("topic-list");
    if (!S.topics) { list.replaceChildren(h("li", { class: "empty" }, "–")); return; }
    const topics = S.topics.slice().sort((a, b) => (a.internal - b.internal) || a.name.localeCompare(b.name));
    if (!topics.length) { list.replaceChildren(h("li", { class: "empty" }, "No topics.")); return; }
    list.replaceChildren(...topics.map((t) => h("li", { "data-topic": t.name, "data-internal": t.internal ? "true" : "false" },
      h("span", {}, t.name), h("span", { class: "parts" }, `${t.partitions} partition${t.partitions === 1 ? "" : "s"}`))));
  }

  function renderGroup() {
    const id = S.selected;
    const section = $("group-detail");
    $("welcome").hidden = !!id;
    section.hidden = !id;
    if (!id) return;
    const summary = S.groups.get(id) || { group_id: id, state: "not found", generation: "–", members: 0 };
    const d = S.detail && S.detail.group_id === id ? S.detail : null;
    const g = d || summary;
    const state = STATES.includes(g.state) ? g.state : "Empty";
    const type = g.type || summary.type || "";
    const consumer = type === "consumer";
    const share = type === "share";
    const modern = consumer || share;
    section.dataset.group = id;
    section.dataset.state = g.state;
    section.dataset.generation = g.generation;
    section.dataset.type = type;
    section.dataset.loaded = d ? "true" : "false";
    if (d && modern) {
      section.dataset.groupEpoch = d.group_epoch;
      section.dataset.assignmentEpoch = d.assignment_epoch;
    } else {
      delete section.dataset.groupEpoch;
      delete section.dataset.assignmentEpoch;
    }
    for (const li of document.querySelectorAll(".legend li[data-for]")) li.hidden = li.dataset.for !== (type || "classic");
    setText($("history-h"), modern ? "Group epochs" : "Generations");
    setText($("history-gen"), modern ? "Group epoch" : "Generation");
    $("group-title").textContent = id;
    const badge = $("group-state");
    badge.className = `badge st-${state}`;
    badge.textContent = g.state;

    const members = d ? d.members : [];
    const leader = g.leader;
    const proto = [g.protocol_type, g.protocol].filter(Boolean).join(" / ") || "–";
    const coord = g.coordinator ? `node ${g.coordinator.node} (partition ${g.coordinator.partition})` : "–";
    const facts = share ? [
      ["Type", "share (KIP-932)"],
      ["Group epoch", g.group_epoch ?? g.generation],
      ["Assignment epoch", g.assignment_epoch ?? "–"],
      ["Members", d ? members.length : g.members],
      ["Assignor", g.protocol || "–"],
      ["Delivery limit", d && d.delivery_count_limit !== undefined ? d.delivery_count_limit : "–"],
      ["Coordinator", coord],
    ] : consumer ? [
      ["Type", "consumer (KIP-848)"],
      ["Group epoch", g.group_epoch ?? g.generation],
      ["Assignment epoch", g.assignment_epoch ?? "–"],
      ["Members", d ? members.length : g.members],
      ["Assignor", g.protocol || "–"],
      ["Coordinator", coord],
    ] : [
      ["Type", type || "–"],
      ["Generation", g.generation],
      ["Members", d ? members.length : g.members],
      ["Protocol", proto],
      ["Leader", leader ? shortMember(leader) : "–"],
      ["Coordinator", coord],
    ];
    $("group-facts").replaceChildren(...facts.map(([k, v]) => h("div", {}, h("dt", {}, k), h("dd", {}, String(v)))));

    drawTimeline(id);
    renderMembers(d);
    renderOffsets(d);
    renderSharePartitions(d, share);
    renderHistory(id);
  }

  function renderMembers(d) {
    const body = $("members").tBodies[0];
    const members = d ? d.members.slice().sort((a, b) => (a.client_id || "").localeCompare(b.client_id || "") ||
                                                        a.member_id.localeCompare(b.member_id)) : [];
    const consumer = !!d && d.type === "consumer";
    const share = !!d && d.type === "share";
    $("members-empty").hidden = !d || members.length > 0;
    $("target-note").hidden = !consumer || members.length === 0;
    const moved = d && d.state === "Stable" ? movedIn(d.group_id, d.generation) : new Map();
    const note = $("moved-note");
    note.hidden = moved.size === 0;
    note.textContent = `${moved.size} partition${moved.size === 1 ? "" : "s"} moved to another member in ` +
      `${consumer || share ? "group epoch" : "generation"} ${d ? d.generation : ""}`;
    if (share) {
      body.replaceChildren(...members.map((m) => shareMemberRow(d, m)));
      return;
    }
    if (consumer) {
      body.replaceChildren(...members.map((m) => consumerMemberRow(d, m, moved)));
      return;
    }
    body.replaceChildren(...members.map((m) => {
      const parts = ((m.assignment && m.assignment.partitions) || []).slice()
        .sort((a, b) => a.topic.localeCompare(b.topic) || a.partition - b.partition);
      const byTopic = new Map();
      for (const tp of parts) {
        if (!byTopic.has(tp.topic)) byTopic.set(tp.topic, []);
        byTopic.get(tp.topic).push(tp.partition);
      }
      const chips = h("div", { class: "chips" });
      for (const [topic, ps] of byTopic) {
        for (const p of ps) {
          const from = moved.get(tpKey(topic, p));
          chips.append(h("span", { class: from ? "chip moved" : "chip", "data-topic": topic, "data-partition": p,
                                   "data-moved": from ? "true" : null,
                                   title: from ? `moved from ${shortMember(from)} in generation ${d.generation}` : null },
                         `${topic}-${p}`));
        }
      }
      if (!parts.length) chips.append(h("span", { class: "sub" }, m.assignment ? "no partitions" : "not assigned yet"));
      const subscribed = m.subscription ? m.subscription.topics.join(", ") : null;
      const host = (m.client_host || "").replace(/^\//, "");
      return h("tr", { "data-member": m.member_id, "data-client": m.client_id },
        h("td", {},
          h("span", { class: "member-id mono", title: m.member_id }, shortMember(m.member_id),
            m.member_id === d.leader ? h("span", { class: "leader-tag", title: "the group leader computes the assignment" }, "leader") : null),
          h("span", { class: "sub" }, [`client ${m.client_id || "–"}`, host, m.instance_id ? `instance ${m.instance_id}` : null]
            .filter(Boolean).join(" · ")),
          subscribed ? h("span", { class: "sub" }, `subscribes ${subscribed}`) : null),
        h("td", {}, chips));
    }));
  }

  // a consumer group's member: its epochs, its reconciliation state, and one chip per partition it
  // owns or is to own: owned and in its target; in its target, not owned yet (awaiting: another
  // member has not released it, or the member has not heartbeated since); owned, not in its target
  // (revoking)
  function consumerMemberRow(d, m, moved) {
    const key = (tp) => tpKey(tp.topic ?? tp.topic_id, tp.partition);
    const all = new Map();
    const owned = new Set();
    const target = new Set();
    const pending = new Set();
    for (const tp of m.assignment.partitions) { all.set(key(tp), tp); owned.add(key(tp)); }
    for (const tp of m.pending_revocation.partitions) { all.set(key(tp), tp); owned.add(key(tp)); pending.add(key(tp)); }
    for (const tp of m.target_assignment.partitions) { if (!all.has(key(tp))) all.set(key(tp), tp); target.add(key(tp)); }
    const parts = [...all.values()].sort((a, b) => (a.topic ?? "").localeCompare(b.topic ?? "") || a.partition - b.partition);
    const chips = h("div", { class: "chips" });
    for (const tp of parts) {
      const k = key(tp);
      const isOwned = owned.has(k), inTarget = target.has(k);
      const from = moved.get(tpKey(tp.topic, tp.partition));
      const kind = isOwned && inTarget ? "" : isOwned ? " revoking" : " awaiting";
      const title = !isOwned ? "in its target assignment, not owned yet"
        : !inTarget ? (pending.has(k) ? "pending revocation: it must give this partition up first"
                                      : "not in its target assignment: to be revoked") : null;
      chips.append(h("span", { class: `chip${kind}${from ? " moved" : ""}`, "data-topic": tp.topic ?? tp.topic_id,
                               "data-partition": tp.partition, "data-owned": String(isOwned),
                               "data-target": String(inTarget), "data-revoking": pending.has(k) ? "true" : null,
                               "data-moved": from ? "true" : null,
                               title: from ? `moved from ${shortMember(from)} in group epoch ${d.generation}` : title },
                     `${tp.topic ?? tp.topic_id}-${tp.partition}`));
    }
    if (!parts.length) chips.append(h("span", { class: "sub" }, "no partitions"));
    const host = (m.client_host || "").replace(/^\//, "");
    const behind = m.member_epoch >= 0 && m.member_epoch < d.assignment_epoch;
    const epochs = [`epoch ${m.member_epoch}`,
                    m.previous_member_epoch !== m.member_epoch ? `previous ${m.previous_member_epoch}` : null,
                    behind ? `target epoch ${d.assignment_epoch}` : null].filter(Boolean).join(" · ");
    return h("tr", { "data-member": m.member_id, "data-client": m.client_id, "data-member-epoch": m.member_epoch,
                     "data-previous-epoch": m.previous_member_epoch, "data-reconciliation": m.state },
      h("td", {},
        h("span", { class: "member-id mono", title: m.member_id }, shortMember(m.member_id)),
        h("span", { class: "sub" }, [`client ${m.client_id || "–"}`, host, m.instance_id ? `instance ${m.instance_id}` : null]
          .filter(Boolean).join(" · ")),
        m.subscribed_topic_names.length ? h("span", { class: "sub" }, `subscribes ${m.subscribed_topic_names.join(", ")}`) : null,
        h("span", { class: "sub epochs" }, epochs,
          h("span", { class: `mstate ms-${m.state}`, title: `reconciliation state: ${m.state}` },
            MEMBER_STATES[m.state] || m.state))),
      h("td", {}, chips));
  }

  // a share group's member: its epochs, the partitions it shares with others, and the records it holds
  // (acquired, under its acquisition locks) in each share-partition
  function shareMemberRow(d, m) {
    const held = new Map();     // "topic\u0000p" -> records acquired
    for (const sp of d.share_partitions || []) {
      for (const holder of sp.holders) {
        if (holder.member_id === m.member_id) held.set(tpKey(sp.topic, sp.partition), holder.records);
      }
    }
    const parts = m.assignment.partitions.slice().sort((a, b) => (a.topic ?? "").localeCompare(b.topic ?? "") ||
                                                                 a.partition - b.partition);
    const chips = h("div", { class: "chips" });
    for (const tp of parts) {
      const n = held.get(tpKey(tp.topic, tp.partition)) || 0;
      chips.append(h("span", { class: n ? "chip holds" : "chip", "data-topic": tp.topic ?? tp.topic_id,
                               "data-partition": tp.partition, "data-holds": n,
                               title: n ? `holds ${n} record${n === 1 ? "" : "s"} (acquired)` : "shared: holds no record now" },
                     `${tp.topic ?? tp.topic_id}-${tp.partition}`, n ? h("span", { class: "held" }, ` ${fmtInt(n)}`) : null));
    }
    if (!parts.length) chips.append(h("span", { class: "sub" }, "no partitions (yet)"));
    const total = [...held.values()].reduce((a, b) => a + b, 0);   // (its assignment's or not: ShareFetch may ask any)
    const host = (m.client_host || "").replace(/^\//, "");
    const behind = m.member_epoch >= 0 && m.member_epoch < d.assignment_epoch;
    const epochs = [`epoch ${m.member_epoch}`, behind ? `target epoch ${d.assignment_epoch}` : null,
                    `holds ${fmtInt(total)} record${total === 1 ? "" : "s"}`].filter(Boolean).join(" · ");
    return h("tr", { "data-member": m.member_id, "data-client": m.client_id, "data-member-epoch": m.member_epoch,
                     "data-holds": total },
      h("td", {},
        h("span", { class: "member-id mono", title: m.member_id }, shortMember(m.member_id)),
        h("span", { class: "sub" }, [`client ${m.client_id || "–"}`, host].filter(Boolean).join(" · ")),
        m.subscribed_topic_names.length ? h("span", { class: "sub" }, `subscribes ${m.subscribed_topic_names.join(", ")}`) : null,
        h("span", { class: "sub epochs" }, epochs)),
      h("td", {}, chips));
  }

  // A share group's share-partitions: SPSO → SPEO, the records between them by state (a bar), how often
  // they were delivered, the lag, and who holds records until when.
  function renderSharePartitions(d, share) {
    $("share-card").hidden = !share;
    $("offsets-card").hidden = share;
    $("two").classList.toggle("single", share);
    if (!share) return;
    const body = $("share-partitions").tBodies[0];
    const rows = d ? d.share_partitions || [] : [];
    $("share-empty").hidden = !d || rows.length > 0;
    const limit = d && d.delivery_count_limit;
    const now = serverNow();
    const widest = Math.max(1, ...rows.map((r) => RECORD_STATES.reduce((a, st) => a + r.records[st], 0)));
    body.replaceChildren(...rows.map((r) => {
      const name = `${r.topic ?? r.topic_id}-${r.partition}`;
      const total = RECORD_STATES.reduce((a, st) => a + r.records[st], 0);
      const bar = h("span", { class: "recbar", "aria-hidden": "true" });
      bar.style.width = `${Math.max(total ? 8 : 0, (100 * total) / widest)}%`;   // CSSOM: allowed by the CSP
      for (const st of RECORD_STATES) {
        if (!r.records[st]) continue;
        const seg = h("span", { class: `rs-${st}`, title: `${r.records[st]} ${st}` });
        seg.style.flexGrow = String(r.records[st]);
        bar.append(seg);
      }
      const counts = h("span", { class: "rec-counts" }, ...RECORD_STATES.map((st) =>
        h("span", { class: `rc rs-${st}`, "data-state": st, title: st }, `${fmtInt(r.records[st])} ${st}`)));
      const deliveries = h("div", { class: "chips" });
      for (const dc of r.delivery_counts) {
        const n = RECORD_STATES.reduce((a, st) => a + dc[st], 0);
        const near = limit && dc.delivery_count >= limit;
        deliveries.append(h("span", { class: near ? "chip dc limit" : "chip dc", "data-delivery-count": dc.delivery_count,
                                      "data-records": n,
                                      title: `${n} record${n === 1 ? "" : "s"} delivered ${dc.delivery_count}×: ` +
                                             RECORD_STATES.filter((st) => dc[st]).map((st) => `${dc[st]} ${st}`).join(", ") +
                                             (near ? ` (the delivery count limit is ${limit})` : "") },
                                   `${dc.delivery_count}× ${fmtInt(n)}`));
      }
      if (!r.delivery_counts.length) deliveries.append(h("span", { class: "sub" }, "–"));
      const holders = h("div", { class: "chips" });
      for (const hd of r.holders) {
        const left = hd.lock_deadline_ms === null ? null : hd.lock_deadline_ms - now;
        holders.append(h("span", { class: "chip", "data-member": hd.member_id, "data-records": hd.records,
                                   title: `${hd.member_id}: ${hd.records} acquired` +
                                          (left === null ? "" : `, first lock expires in ${fmtMs(Math.max(0, left))}`) },
                         `${shortMember(hd.member_id)} ${fmtInt(hd.records)}`));
      }
      if (!r.holders.length) holders.append(h("span", { class: "sub" }, "nobody"));
      const offsets = r.start_offset < 0 ? "not started" : `${fmtInt(r.start_offset)} → ${fmtInt(r.end_offset)}`;
      return h("tr", { "data-topic": r.topic ?? r.topic_id, "data-partition": r.partition,
                       "data-loaded": r.loaded ? "true" : "false", "data-start": r.start_offset, "data-end": r.end_offset,
                       ...Object.fromEntries(RECORD_STATES.map((st) => [`data-${st}`, r.records[st]])),
                       "data-lag": r.lag },
        h("td", { class: "mono", title: `topic id ${r.topic_id}` }, name,
          h("span", { class: "sub" }, r.loaded ? `leader node ${r.leader}` : "not loaded: its persisted state")),
        h("td", { class: "num mono", title: "share-partition start offset (SPSO) → end offset (SPEO)" }, offsets,
          h("span", { class: "sub" }, `log end ${fmtInt(r.log_end_offset)}`)),
        h("td", {}, h("span", { class: "rec", title: `${total} records in flight` }, bar), counts),
        h("td", {}, deliveries),
        h("td", { class: "num" }, fmtInt(r.lag)),
        h("td", {}, holders));
    }));
  }

  // The open transactions, oldest first: how long each has been open against its timeout (red once past
  // it: the coordinator aborts it at its next check), its partitions and pending offsets; then the last
  // ones completed (committed or aborted, and how long they took) or fenced (and why).
  function renderTransactions() {
    const card = $("txn-card");
    const all = S.txns || [];
    card.hidden = all.length === 0 && S.txnRecent.length === 0;
    if (card.hidden) return;
    const since = performance.now() - S.txnsAt;     // the ages go on between two reads
    const open = all.filter((t) => OPEN_TXN_STATES.has(t.state))
      .sort((a, b) => (a.start_time_ms ?? 0) - (b.start_time_ms ?? 0) || a.transactional_id.localeCompare(b.transactional_id));
    setText($("txn-count"), `(${open.length} open of ${all.length} transactional id${all.length === 1 ? "" : "s"})`);
    $("txn-empty").hidden = open.length > 0;
    $("txn-open").tBodies[0].replaceChildren(...open.map((t) => {
      const age = t.duration_ms === null ? null : t.duration_ms + since;
      const late = t.past_timeout || (t.state === "Ongoing" && age !== null && age > t.timeout_ms);
      const fill = h("span", {});
      fill.style.width = `${age === null ? 0 : Math.min(100, (100 * age) / Math.max(1, t.timeout_ms))}%`;   // CSSOM
      return h("tr", { "data-txn": t.transactional_id, "data-state": t.state, "data-producer-id": t.producer_id,
                       "data-epoch": t.producer_epoch, "data-partitions": t.partitions,
                       "data-pending-offsets": t.pending_offsets, "data-past-timeout": late ? "true" : "false" },
        h("td", { class: "mono", title: t.transactional_id }, t.transactional_id,
          h("span", { class: "sub" }, `coordinator node ${t.coordinator.node} (partition ${t.coordinator.partition})`)),
        h("td", { class: "num mono" }, `${t.producer_id} / ${t.producer_epoch}`),
        h("td", {}, h("span", { class: `badge ts-${t.state}` }, t.state)),
        h("td", { title: late ? "past its transaction.timeout.ms: the coordinator aborts it at its next check" : null },
          h("span", { class: "age" }, h("span", { class: "agebar", "aria-hidden": "true" }, fill),
            `${fmtMs(age)} of ${fmtMs(t.timeout_ms)}${late ? " (timed out)" : ""}`)),
        h("td", { class: "num" }, fmtInt(t.partitions)),
        h("td", { class: "num" }, fmtInt(t.pending_offsets)));
    }));
    $("txn-recent-empty").hidden = S.txnRecent.length > 0;
    $("txn-recent").replaceChildren(...S.txnRecent.map((ev) => {
      const fenced = ev.event === "transaction.fenced";
      const what = fenced ? `fenced (${ev.cause})` : ev.result === "commit" ? "committed" : "aborted";
      return h("li", { "data-event": ev.event, "data-txn": ev.transactional_id, "data-result": ev.result || null,
                       "data-cause": ev.cause || null },
        h("span", { class: "when" }, fmtClock(ev.ts_ms, true)),
        h("span", { class: "mono" }, ev.transactional_id),
        h("span", { class: "what" }, what),
        h("span", { class: "sub" }, fenced ? `producer ${ev.producer_id}, epoch now ${ev.producer_epoch}`
                                           : `in ${fmtMs(ev.duration_ms)}, producer ${ev.producer_id}`));
    }));
  }

  function renderOffsets(d) {
    const body = $("offsets").tBodies[0];
    const rows = d ? (d.offsets || []).slice().sort((a, b) => a.topic.localeCompare(b.topic) || a.partition - b.partition) : [];
    $("offsets-empty").hidden = !d || rows.length > 0;
    const owner = new Map();
    for (const m of (d && d.members) || []) {
      for (const tp of (m.assignment && m.assignment.partitions) || []) owner.set(tpKey(tp.topic, tp.partition), m.member_id);
    }
    const lags = rows.map((r) => (typeof r.lag === "number" ? r.lag : 0));
    const maxLag = Math.max(1, ...lags);
    const total = lags.reduce((a, b) => a + b, 0);
    $("lag-total").textContent = rows.length ? `(total lag ${fmtInt(total)})` : "";
    body.replaceChildren(...rows.map((r) => {
      const who = owner.get(tpKey(r.topic, r.partition));
      const lag = typeof r.lag === "number" ? r.lag : null;
      return h("tr", { "data-topic": r.topic, "data-partition": r.partition, "data-lag": lag },
        h("td", { class: "mono" }, `${r.topic}-${r.partition}`),
        h("td", { class: "num", title: r.metadata ? `metadata: ${r.metadata}` : null }, fmtInt(r.offset)),
        h("td", { class: "num" }, fmtInt(r.log_end_offset)),
        h("td", { class: lag ? "num" : "num lag0" },
          h("span", { class: "lag" }, h("span", { class: "lagbar", "aria-hidden": "true" }, lagFill(lag, maxLag)), fmtInt(lag))),
        h("td", { class: "mono owner", title: who || null }, who ? shortMember(who) : "–"));
    }));
  }

  function lagFill(lag, maxLag) {
    const fill = h("span", {});
    fill.style.width = `${lag ? Math.max(4, (100 * lag) / maxLag) : 100}%`;   // CSSOM: allowed by the CSP
    return fill;
  }

  function renderHistory(id) {
    const model = timelineModel(S.events.get(id) || [], serverNow());
    const body = $("history").tBodies[0];
    const bars = model.bars.slice().reverse();
    $("history-empty").hidden = bars.length > 0;
    const names = (marks) => marks.length ? marks.map((m) => markName(m) + (m.reason && m.kind === "leave" ? ` (${m.reason})` : "")).join(", ") : "–";
    let unknown = false;
    body.replaceChildren(...bars.map((b) => {
      const moved = movedCell(id, b);
      unknown = unknown || moved.unknown;
      return h("tr", { "data-generation": b.open ? null : b.generation, "data-open": b.open ? "true" : null },
        h("td", { class: "num" }, b.open ? "…" : String(b.generation)),
        h("td", { class: "mono" }, b.open ? `started ${fmtClock(b.start, true)}` : fmtClock(b.end, true)),
        h("td", { class: "num" }, fmtMs(b.duration)),
        h("td", {}, [b.reason || "–", b.rounds > 1 ? `${b.rounds} rounds` : null, b.outcome === "Empty" ? "ended Empty" : null]
          .filter(Boolean).join(" · ")),
        h("td", {}, names(b.joined)),
        h("td", {}, names(b.left)),
        h("td", { class: "num" }, b.open ? "–" : String(b.members)),
        moved.td);
    }));
    $("moved-unknown-note").hidden = !unknown;
  }

  // The Moved cell of a rebalance: how many partitions changed owner in it. The page knows only
  // when it saw this generation Stable and an earlier one (it learns assignments while open, from
  // the group's detail); otherwise the cell says why it cannot tell.
  function movedCell(id, b) {
    const gens = S.owners.get(id);
    const word = b.consumer ? "group epoch" : "generation";
    let why = null;
    let kind = null;
    if (b.open) {
      why = "still rebalancing";
    } else if (b.outcome === "Empty") {
      why = "the group ended Empty: no member owns a partition";
    } else if (!gens || !gens.has(b.generation)) {
      kind = "not_seen";
      why = `not known: this page did not see ${word} ${b.generation} Stable (it was not open then, or the ` +
            "group moved on before it looked), so it never saw who owned what";
    } else if (![...gens.keys()].some((g) => g < b.generation)) {
      kind = "first_seen";
      why = `not known: ${word} ${b.generation} is the first this page saw Stable, with nothing earlier to compare`;
    }
    if (why !== null) {
      return { unknown: kind !== null,
               td: h("td", { class: kind ? "num unknown" : "num", title: why, "data-moved-unknown": kind }, "–") };
    }
    const moved = movedIn(id, b.generation);
    return { unknown: false,
             td: h("td", { class: "num", "data-moved": moved.size,
                           title: moved.size ? [...moved.keys()].map((k) => k.replace("\u0000", "-")).join(", ") : null },
                   String(moved.size)) };
  }

  // ---------------------------------------------------------------- start

  window.addEventListener("hashchange", () => {
    const id = groupFromHash();
    if (id && id !== S.selected) select(id, true);
  });
  window.addEventListener("resize", render);

  async function start() {
    const wanted = groupFromHash();
    if (wanted) select(wanted, false);
    connect();
    await resync();
    setInterval(() => {
      loadNodes(); loadTopics(); loadGroups().then(render); loadTransactions();
      scheduleDetail(0);
    }, POLL_MS);
    // the open rebalance bar grows and "now" moves on
    setInterval(() => { if (S.selected && !document.hidden) drawTimeline(S.selected); }, 500);
    // and so do the open transactions' ages
    setInterval(() => { if (!document.hidden && (S.txns || []).some((t) => OPEN_TXN_STATES.has(t.state))) renderTransactions(); }, 500);
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
