'use strict'
// queuebench process client for graphile-worker (contract v1: ../CONTRACT.md).
const pg = require('pg')
const { run, runMigrations, makeWorkerUtils, Logger } = require('graphile-worker')
const qb = require('../common/qb')

// After a graceful shutdown starts, graphile-worker waits for running jobs and
// fires their abortSignal after this long (library default 5 s, too long for
// the contract's 5 s budget). Our handler's sleep honours the signal.
const ABORT_TIMEOUT_MS = 3000

const logger = new Logger(() => (level, message) => {
  if (level === 'debug' && !process.env.GRAPHILE_LOGGER_DEBUG) return
  process.stderr.write(`graphile-worker ${level}: ${message}\n`)
})

// graphile-worker builds its pool (job fetching, completion, LISTEN) from this
// connection string, so application_name is set on every one of its connections.
function connection (env, maxPoolSize) {
  return { connectionString: qb.withAppName(env.url, env.appName), maxPoolSize }
}

async function setup (env) {
  await runMigrations({ ...connection(env, 2), schema: env.schema, logger })
}

async function enqueue (env, args) {
  const count = qb.parseCount(args[0])
  const utils = await makeWorkerUtils({ ...connection(env, 2), schema: env.schema, logger })
  try {
    const all = qb.payloads(env, count)
    for (let i = 0; i < all.length; i += 500) {
      await utils.addJobs(all.slice(i, i + 500).map((payload) => ({ identifier: env.queue, payload })))
    }
  } finally {
    await utils.release()
  }
}

async function work (env) {
  if (env.bug === 'ack-first') qb.fail('graphile-worker: QUEUEBENCH_CLIENT_BUG=ack-first is not supported (no public fetch/complete API for locked jobs)')
  const effects = new qb.Effects(pg, env)
  // graphile-worker's advice: pool size max(10, concurrency + 2).
  const options = {
    ...connection(env, Math.max(10, env.concurrency + 2)),
    schema: env.schema,
    concurrency: env.concurrency,
    noHandleSignals: true,
    logger,
    gracefulShutdownAbortTimeout: ABORT_TIMEOUT_MS,
    taskList: {
      [env.queue]: async (payload, helpers) => {
        await qb.runHandler(env, effects, helpers.job.id, payload, helpers.job.attempts, { signal: helpers.abortSignal })
      }
    }
  }
  if (env.pollMs !== null) options.pollInterval = env.pollMs // library default 2000 ms
  // QUEUEBENCH_BATCH = B: graphile-worker's batching as its performance page configures it:
  // a local queue fetching up to B jobs at once, completions and failures written in batches.
  if (env.batch !== null) {
    options.preset = { worker: { localQueue: { size: env.batch }, completeJobBatchDelay: 0, failJobBatchDelay: 0 } }
  }
  // Third argument: no cron items (and no crontab file is read).
  const runner = await run(options, undefined, [])

  qb.onTerminate(async () => {
    await runner.stop('SIGTERM')
    await effects.close()
  })
  runner.promise.catch((err) => process.stderr.write(`runner: ${err && err.message}\n`))
  process.stderr.write(`graphile-worker ${env.worker}: concurrency ${env.concurrency} on task ${env.queue} in schema ${env.schema}\n`)
}

qb.main({ setup, enqueue, work })
