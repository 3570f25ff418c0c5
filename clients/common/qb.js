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
    // QUEUEBENCH_RECORD=0: no effect rows, no events (scripts/clients-overhead.sh only)
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

function emit (env, ev, job, n) {
  if (!env.events) return
  // Writes to pipes and files are synchronous in Node on Linux: the line is
  // out of the process when write() returns.
  process.stdout.write(JSON.stringify({ ev, job: String(job), n, worker: env.worker, t: nowMs() }) + '\n')
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
    this.sql = `INSERT INTO ${quoteIdent(env.schema)}.queuebench_effects (job_id, n, worker, attempt) VALUES `
    this.pending = []
    this.scheduled = false
    this.pool = new pg.Pool({
      connectionString: withAppName(env.url, env.effectsAppName),
      max: env.concurrency + 1
    })
    this.pool.on('error', (err) => process.stderr.write(`effects pool: ${err.message}\n`))
  }

  // The effect rows of the handlers that finish in the same turn of the event loop go in one
  // INSERT (a group commit): each handler still returns only after its own row is committed,
  // so the contract holds, and a fast library is not held to one round trip per job.
  record (jobId, n, attempt) {
    const values = [String(jobId), n, this.env.worker, attempt === undefined ? null : attempt]
    return new Promise((resolve, reject) => {
      this.pending.push({ values, resolve, reject })
      if (this.env.bug === 'twice') this.pending.push({ values, resolve: () => {}, reject: () => {} })
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
      const rows = batch.map((_, k) => `($${4 * k + 1}, $${4 * k + 2}, $${4 * k + 3}, $${4 * k + 4})`)
      try {
        await this.pool.query(this.sql + rows.join(', '), batch.flatMap((b) => b.values))
        for (const b of batch) b.resolve()
      } catch (err) {
        for (const b of batch) b.reject(err)
      }
    }
  }

  async close () {
    await this.pool.end()
  }
}

// The contract's job handler. opts.skipEffect: ack-first mode's simulated crash.
async function runHandler (env, effects, jobId, data, attempt, opts = {}) {
  let n = null
  try {
    const p = parsePayload(data)
    n = p.n
    emit(env, 'start', jobId, n)
    await sleep(p.workMs, opts.signal)
    if (!opts.skipEffect && env.record) await effects.record(jobId, p.n, attempt)
    if (p.fail) throw new Error(`job ${jobId} (n=${p.n}) failed on purpose (payload fail=true)`)
  } catch (err) {
    emit(env, 'error', jobId, n)
    throw err
  }
  emit(env, 'end', jobId, n)
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
