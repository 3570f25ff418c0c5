'use strict'
// Shared glue for the Node.js process clients (contract v1, see ../CONTRACT.md).
// It knows nothing about any queue library: each client's worker.js passes in
// its own `pg` module (so this file resolves no packages itself) and calls
// runHandler() from inside the library's job handler.

const { performance } = require('node:perf_hooks')

// Anything a library or we print with console.log must not reach stdout:
// stdout carries only the QUEUEBENCH_EVENTS JSON lines.
for (const k of ['log', 'info', 'debug']) console[k] = (...a) => console.error(...a)

const SCHEMA_RE = /^[a-z_][a-z0-9_]{0,49}$/

function fail (msg) {
  process.stderr.write(`queuebench client: ${msg}\n`)
  process.exit(2)
}

function intEnv (name, dflt, min) {
  const raw = process.env[name]
  if (raw === undefined || raw === '') return dflt
  const v = Number(raw)
  if (!Number.isInteger(v) || v < min) fail(`${name} must be an integer >= ${min}`)
  return v
}

function readEnv () {
  const url = process.env.QUEUEBENCH_DATABASE_URL
  if (!url) fail('QUEUEBENCH_DATABASE_URL is not set')
  const schema = process.env.QUEUEBENCH_SCHEMA
  if (!schema) fail('QUEUEBENCH_SCHEMA is not set')
  if (!SCHEMA_RE.test(schema)) fail('QUEUEBENCH_SCHEMA must match ^[a-z_][a-z0-9_]*$ (at most 50 characters)')
  const worker = process.env.QUEUEBENCH_WORKER || `pid${process.pid}`
  const appName = process.env.QUEUEBENCH_APPLICATION_NAME || `queuebench-${worker}`
  const pollRaw = process.env.QUEUEBENCH_POLL_MS
  const workMsRaw = process.env.QUEUEBENCH_WORK_MS
  const workMs = workMsRaw === undefined || workMsRaw === '' ? 0 : Number(workMsRaw)
  if (!Number.isFinite(workMs) || workMs < 0) fail('QUEUEBENCH_WORK_MS must be a number >= 0')
  const bug = process.env.QUEUEBENCH_CLIENT_BUG || ''
  const recordRaw = process.env.QUEUEBENCH_RECORD || '1'
  if (!['0', '1'].includes(recordRaw)) fail('QUEUEBENCH_RECORD must be 0 or 1')
  const record = recordRaw === '1'
  if (!['', 'twice', 'ack-first'].includes(bug)) fail(`unknown QUEUEBENCH_CLIENT_BUG=${bug}`)
  return {
    url,
    schema,
    worker,
    appName,
    effectsAppName: `${appName}-effects`,
    concurrency: intEnv('QUEUEBENCH_CONCURRENCY', 1, 1),
    queue: process.env.QUEUEBENCH_QUEUE || 'queuebench',
    pollMs: pollRaw === undefined || pollRaw === '' ? null : intEnv('QUEUEBENCH_POLL_MS', null, 1),
    events: process.env.QUEUEBENCH_EVENTS === '1' && record,
    // QUEUEBENCH_RECORD=0: no effect rows, no events (cargo xtask clients-overhead only)
    record,
    // QUEUEBENCH_BATCH: jobs per fetch where the library fetches in batches (null: as configured)
    batch: intEnv('QUEUEBENCH_BATCH', null, 1),
    workMs,
    bug
  }
}

// The URL with application_name forced into its query string, so that a
// value already in the URL cannot win over ours (node-postgres lets the
// connection string override explicit options).
function withAppName (url, appName) {
  try {
    const u = new URL(url)
    u.searchParams.set('application_name', appName)
    return u.toString()
  } catch (_) {
    fail('QUEUEBENCH_DATABASE_URL is not a URL (its value is not shown)')
  }
}

function quoteIdent (s) {
  return '"' + s.replace(/"/g, '""') + '"'
}

function nowMs () {
  return performance.timeOrigin + performance.now()
}

// Event lines wait in one buffer and leave in one write() per turn of the event loop (or
// earlier, where the contract needs them out: before an effect row is sent, before a handler
// returns or throws). Writes to pipes and files are synchronous in Node on Linux: the lines
// are out of the process when write() returns.
const events = { buf: '', scheduled: false }

function eventLine (env, ev, job, n) {
  // The contract's line, built by hand (JSON.stringify of an object costs more per line).
  return `{"ev":"${ev}","job":${JSON.stringify(String(job))},"n":${n === null || n === undefined ? 'null' : n},"worker":${JSON.stringify(env.worker)},"t":${nowMs()}}\n`
}

function flushEvents () {
  events.scheduled = false
  if (events.buf === '') return
  const out = events.buf
  events.buf = ''
  process.stdout.write(out)
}

// Buffer a line; it is written at the end of this turn at the latest.
function emit (env, ev, job, n) {
  if (!env.events) return
  events.buf += eventLine(env, ev, job, n)
  if (!events.scheduled) {
    events.scheduled = true
    setImmediate(flushEvents)
  }
}

// Buffer a line and write the buffer now (a handler about to return or throw).
function emitNow (env, ev, job, n) {
  if (!env.events) return
  events.buf += eventLine(env, ev, job, n)
  flushEvents()
}

function sleep (ms, signal) {
  return new Promise((resolve, reject) => {
    if (!(ms > 0)) return resolve()
    if (signal && signal.aborted) return reject(new Error('aborted'))
    const t = setTimeout(() => { if (signal) signal.removeEventListener('abort', onAbort); resolve() }, ms)
    function onAbort () { clearTimeout(t); reject(new Error('aborted by the library during sleep')) }
    if (signal) signal.addEventListener('abort', onAbort, { once: true })
  })
}

function parsePayload (data) {
  const p = (typeof data === 'string') ? JSON.parse(data) : (data || {})
  const n = Number(p.n)
  if (!Number.isSafeInteger(n)) throw new Error('payload has no integer n')
  const workMs = p.work_ms === undefined || p.work_ms === null ? 0 : Number(p.work_ms)
  if (!Number.isFinite(workMs) || workMs < 0) throw new Error('payload work_ms is not a number >= 0')
  return { n, workMs, fail: p.fail === true }
}

class Effects {
  constructor (pg, env) {
    this.env = env
    // One statement text for any number of rows, prepared once per connection (a named
    // statement): the rows travel as four arrays.
    this.statement = {
      name: 'queuebench_effects',
      text: `INSERT INTO ${quoteIdent(env.schema)}.queuebench_effects (job_id, n, worker, attempt) ` +
        'SELECT j, n, $3::text, a FROM unnest($1::text[], $2::bigint[], $4::int[]) AS u(j, n, a)'
    }
    this.pending = []
    this.scheduled = false
    this.pool = new pg.Pool({
      connectionString: withAppName(env.url, env.effectsAppName),
      max: env.concurrency + 1
    })
    this.pool.on('error', (err) => process.stderr.write(`effects pool: ${err.message}\n`))
    // Asynchronous commit (CONTRACT.md, "The job handler"): the row is committed and visible
    // when the INSERT returns; its commit record precedes, in the server's write-ahead log,
    // the library's own commit that marks the job done, so a server that kept that commit
    // kept the row. The handler does not wait for a WAL flush of its own.
    this.pool.on('connect', (client) => {
      client.query('SET synchronous_commit TO off').catch((err) => process.stderr.write(`effects pool: ${err.message}\n`))
    })
  }

  // The effect rows of the handlers that finish in the same turn of the event loop go in one
  // INSERT (a group commit): each handler still returns only after its own row is committed,
  // so the contract holds, and a fast library is not held to one round trip per job.
  // `closing`: the event line ('end' or 'error') the handler's return or throw stands for; it
  // is written, with the others of the batch in one write, after the commit and before any of
  // the batch's handlers goes on.
  record (jobId, n, attempt, closing) {
    const row = { job: String(jobId), n, attempt: attempt === undefined ? null : attempt, closing }
    return new Promise((resolve, reject) => {
      row.resolve = resolve
      row.reject = reject
      this.pending.push(row)
      if (this.env.bug === 'twice') this.pending.push({ ...row, closing: null, resolve: () => {}, reject: () => {} })
      if (!this.scheduled) {
        this.scheduled = true
        setImmediate(() => this.flush())
      }
    })
  }

  async flush () {
    this.scheduled = false
    while (this.pending.length) {
      const batch = this.pending.splice(0, 500)
      // Every start line is out before its effect row is sent.
      flushEvents()
      try {
        await this.pool.query({
          ...this.statement,
          values: [batch.map((b) => b.job), batch.map((b) => b.n), this.env.worker, batch.map((b) => b.attempt)]
        })
      } catch (err) {
        for (const b of batch) b.reject(err)
        continue
      }
      if (this.env.events) {
        for (const b of batch) if (b.closing) events.buf += eventLine(this.env, b.closing, b.job, b.n)
        flushEvents()
      }
      for (const b of batch) b.resolve()
    }
  }

  async close () {
    await this.pool.end()
  }
}

// The contract's job handler. opts.skipEffect: ack-first mode's simulated crash.
async function runHandler (env, effects, jobId, data, attempt, opts = {}) {
  let p = null
  try {
    p = parsePayload(data)
    emit(env, 'start', jobId, p.n)
    await sleep(p.workMs, opts.signal)
  } catch (err) {
    emitNow(env, 'error', jobId, p && p.n)
    throw err
  }
  const closing = p.fail ? 'error' : 'end'
  if (!opts.skipEffect && env.record) {
    try {
      // Resolves after the commit, with this handler's closing line already written.
      await effects.record(jobId, p.n, attempt, closing)
    } catch (err) {
      emitNow(env, 'error', jobId, p.n)
      throw err
    }
  } else {
    emitNow(env, closing, jobId, p.n)
  }
  if (p.fail) throw new Error(`job ${jobId} (n=${p.n}) failed on purpose (payload fail=true)`)
}

// Enqueue payloads 1..N.
function payloads (env, count) {
  const out = []
  for (let i = 1; i <= count; i++) out.push({ n: i, work_ms: env.workMs })
  return out
}

function parseCount (arg) {
  const v = Number(arg)
  if (!Number.isSafeInteger(v) || v < 0) fail('usage: enqueue N (N an integer >= 0)')
  return v
}

// SIGTERM/SIGINT: run stop() once; exit 0 when it resolves. If it has not
// resolved after 4.5 s, exit 3 so queuebench can tell a forced stop from a
// graceful one (the 5 s budget of the contract is never exceeded).
function onTerminate (stop) {
  let stopping = false
  const handler = (sig) => {
    if (stopping) return
    stopping = true
    process.stderr.write(`queuebench client: ${sig}, stopping\n`)
    const t = setTimeout(() => {
      process.stderr.write('queuebench client: graceful stop took over 4.5 s; exiting 3\n')
      process.exit(3)
    }, 4500)
    Promise.resolve().then(stop).then(
      () => { clearTimeout(t); process.exit(0) },
      (err) => { process.stderr.write(`queuebench client: stop failed: ${err && err.message}\n`); process.exit(1) })
  }
  process.on('SIGTERM', handler)
  process.on('SIGINT', handler)
}

function main (commands) {
  const cmd = process.argv[2]
  const fn = commands[cmd]
  if (!fn) fail(`usage: worker.js setup | work | enqueue N (got ${JSON.stringify(cmd)})`)
  const env = readEnv()
  fn(env, process.argv.slice(3)).then(
    (code) => { if (cmd !== 'work') process.exit(code || 0) },
    (err) => { process.stderr.write(`queuebench client: ${cmd} failed: ${err && err.stack ? err.stack : err}\n`); process.exit(1) })
}

module.exports = { readEnv, withAppName, quoteIdent, emit, sleep, parsePayload, Effects, runHandler, payloads, parseCount, onTerminate, main, fail }
