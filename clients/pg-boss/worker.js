'use strict'
// queuebench process client for pg-boss (contract v1: ../CONTRACT.md).
const pg = require('pg')
const PgBoss = require('pg-boss')
const qb = require('../common/qb')

// pg-boss stop(): how long to wait for running handlers before it fails them
// (its default is 30 s; the contract gives a client 5 s in all).
const STOP_TIMEOUT_MS = 3500

function bossConfig (env, extra) {
  return {
    connectionString: qb.withAppName(env.url, env.appName),
    application_name: env.appName,
    schema: env.schema,
    // Cron scheduling is not used by queuebench; keep its timers and queues out.
    schedule: false,
    ...extra
  }
}

function pollingOptions (env) {
  if (env.pollMs === null) return {} // pg-boss default: 2 s
  if (env.pollMs < 500) qb.fail('pg-boss: QUEUEBENCH_POLL_MS must be >= 500 (pg-boss minimum pollingIntervalSeconds is 0.5)')
  return { pollingIntervalSeconds: env.pollMs / 1000 }
}

async function startBoss (env, extra) {
  const boss = new PgBoss(bossConfig(env, extra))
  boss.on('error', (err) => process.stderr.write(`pg-boss error: ${err && err.message}\n`))
  await boss.start()
  return boss
}

async function setup (env) {
  // migrate: true makes start() install (or migrate) pg-boss's schema through
  // its own Contractor; createQueue() then creates the queue (in v10 a queue
  // must exist before jobs can be sent to it; it is a partition of the job table).
  const boss = await startBoss(env, { migrate: true, supervise: false, max: 2 })
  await boss.createQueue(env.queue)
  await boss.stop({ graceful: false, wait: true })
}

async function enqueue (env, args) {
  const count = qb.parseCount(args[0])
  const boss = await startBoss(env, { migrate: false, supervise: false, max: 2 })
  const all = qb.payloads(env, count)
  for (let i = 0; i < all.length; i += 500) {
    await boss.insert(all.slice(i, i + 500).map((data) => ({ name: env.queue, data })))
  }
  await boss.stop({ graceful: false, wait: true })
}

async function work (env) {
  const polling = pollingOptions(env) // checked first: a bad value is exit 2
  const effects = new qb.Effects(pg, env)
  // supervise (maintenance: expiring jobs that outlive expireIn, archiving) stays on.
  const boss = await startBoss(env, { migrate: false, supervise: true, max: env.concurrency + 2 })
  let stopping = false
  const loops = []

  if (env.bug === 'ack-first') {
    // Deliberately broken: fetch, complete at once, then do the side effect
    // (skipped for every n divisible by 50, as if the process died after the ack).
    const interval = env.pollMs === null ? 2000 : env.pollMs
    for (let i = 0; i < env.concurrency; i++) {
      loops.push((async () => {
        while (!stopping) {
          let jobs = []
          try {
            jobs = await boss.fetch(env.queue, { includeMetadata: true })
          } catch (err) {
            process.stderr.write(`fetch: ${err.message}\n`)
          }
          if (!jobs.length) { await qb.sleep(interval); continue }
          const job = jobs[0]
          await boss.complete(env.queue, job.id)
          const n = Number(job.data && job.data.n)
          try {
            await qb.runHandler(env, effects, job.id, job.data, job.retryCount, { skipEffect: n % 50 === 0 })
          } catch (err) {
            process.stderr.write(`handler: ${err.message}\n`)
          }
        }
      })())
    }
  } else {
    // pg-boss v10 has no teamSize: each work() call is one polling worker that
    // runs one batch at a time, so concurrency N means N work() calls.
    // QUEUEBENCH_BATCH = B: each work() call fetches up to B jobs per poll (pg-boss's
    // batchSize) and runs them side by side; a job that throws is failed on its own and
    // the rest of the batch completes (pg-boss completes a batch whose handler resolves).
    const batchSize = env.batch || 1
    for (let i = 0; i < env.concurrency; i++) {
      await boss.work(env.queue, { batchSize, includeMetadata: true, ...polling }, async (jobs) => {
        if (jobs.length === 1) return qb.runHandler(env, effects, jobs[0].id, jobs[0].data, jobs[0].retryCount)
        const settled = await Promise.allSettled(jobs.map((job) => qb.runHandler(env, effects, job.id, job.data, job.retryCount)))
        const failed = jobs.filter((_, k) => settled[k].status === 'rejected').map((job) => job.id)
        if (failed.length) await boss.fail(env.queue, failed, { message: 'handler threw' })
      })
    }
  }

  qb.onTerminate(async () => {
    stopping = true
    await boss.stop({ graceful: true, timeout: STOP_TIMEOUT_MS, wait: true })
    await Promise.race([Promise.all(loops), qb.sleep(500)])
    await effects.close()
  })
  process.stderr.write(`pg-boss worker ${env.worker}: ${env.concurrency} handler(s) on queue ${env.queue} in schema ${env.schema}\n`)
}

qb.main({ setup, enqueue, work })
