#!/usr/bin/env node
/*
 * node_checks.js - what an ioredis or node-redis user reads from a server.
 *
 * Run by tests/integration/node-clients.sh against ringkvd, and against
 * Debian's redis-server 7 in the same run, with the same checks for each
 * library (the cases of redis_py_checks.py): a transactional pipeline
 * (multi().exec()) answering every reply with every write applied, a queued
 * error aborting the whole EXEC with nothing applied, a cache-style set with
 * an expiry (SET k v EX n) and its TTL, SET NX / XX / GET, GETDEL, scan
 * iteration returning each of many keys exactly once, info()'s used_memory
 * and role, AUTH against a server without a password (username "default"
 * with any password connects, as in Redis 7) and against one with
 * requirepass (no password: NOAUTH; the right one connects; a wrong one is
 * WRONGPASS), MGET with a key longer than any key-max answering null, and
 * RESP3 (node-redis with RESP 3: HELLO 3 AUTH) for the same reads.
 *
 * Needs the libraries of tests/clients/package-lock.json (npm ci).  Each
 * check prints one line, "ok TARGET LIB: what" or "FAIL TARGET LIB: what:
 * detail"; the exit status is 1 when any check failed, 2 on bad usage.
 *
 *   node node_checks.js --target NAME --open PORT --locked PORT --password PW
 *                       [--lib ioredis|node-redis]
 *
 * --open is a server without requirepass, --locked one with requirepass PW.
 */
'use strict';

const IORedis = require('ioredis');
const nodeRedis = require('redis');

const HOST = '127.0.0.1';
// Every call here answers in milliseconds on loopback.
const TIMEOUT_MS = 10000;
// Longer than ringkv's largest key-max (503 bytes), so no server can hold it.
const LONG_KEY = 'k'.repeat(600);
// Keys the scan checks must each see exactly once.
const SCAN_KEYS = 2000;

let failures = 0;

function report(target, what, ok, detail) {
  if (ok) {
    console.log(`ok ${target}: ${what}`);
  } else {
    failures++;
    console.log(`FAIL ${target}: ${what}: ${detail}`);
  }
}

/* Run fn() (async, answering [ok, detail]); an exception is a failure naming it. */
async function check(target, what, fn) {
  let ok;
  let detail;
  try {
    [ok, detail] = await fn();
  } catch (e) {
    ok = false;
    detail = `${e && e.name}: ${e && e.message}`;
  }
  report(target, what, ok, detail === undefined ? '' : detail);
}

/* [ok, detail]: fn() was rejected with text in its message. */
async function rejects(fn, text) {
  let got;
  try {
    got = await fn();
  } catch (e) {
    const msg = String(e && e.message);
    return [msg.includes(text), msg];
  }
  return [false, `no error, answered ${JSON.stringify(got)}`];
}

function same(got, want) {
  return [JSON.stringify(got) === JSON.stringify(want), `got ${JSON.stringify(got)}`];
}

/* The two libraries behind one small interface, so the checks are written once. */
const libs = {
  ioredis: {
    version: require('ioredis/package.json').version,
    async connect(port, opts = {}) {
      const c = new IORedis({
        host: HOST, port, lazyConnect: true, connectTimeout: TIMEOUT_MS, commandTimeout: TIMEOUT_MS,
        maxRetriesPerRequest: 0, retryStrategy: () => null, enableOfflineQueue: false,
        enableReadyCheck: false, username: opts.username, password: opts.password,
      });
      // ioredis closes the connection on a refused AUTH and rejects with "Connection is
      // closed"; the server's answer comes as an error event: name it in the rejection.
      let last = '';
      c.on('error', (e) => { last = e.message; });
      const named = (e) => new Error(`${e.message}${last ? ` (${last})` : ''}`);
      try {
        await c.connect();
        await c.ping();
      } catch (e) {
        c.disconnect();
        throw named(e);
      }
      return {
        raw: c,
        execAbort: 'EXECABORT',
        close: () => c.disconnect(),
        set: (k, v, ...o) => c.set(k, v, ...o),
        get: (k) => c.get(k),
        getdel: (k) => c.getdel(k),
        ttl: (k) => c.ttl(k),
        mget: (...k) => c.mget(...k),
        del: (...k) => c.del(...k),
        info: () => c.info(),
        ping: () => c.ping(),
        multi: (cmds) => cmds.reduce((m, [n, ...a]) => m[n](...a), c.multi()).exec()
          .then((res) => res.map(([err, v]) => (err ? `ERR ${err.message}` : v))),
        async scanAll(match) {
          const seen = [];
          for await (const batch of c.scanStream({ match, count: 100 })) seen.push(...batch);
          return seen;
        },
      };
    },
  },
  'node-redis': {
    version: require('redis/package.json').version,
    async connect(port, opts = {}) {
      const c = nodeRedis.createClient({
        socket: { host: HOST, port, connectTimeout: TIMEOUT_MS, reconnectStrategy: false },
        username: opts.username, password: opts.password, RESP: opts.resp || 2,
      });
      c.on('error', () => {});  // reported by the rejected connect() or command
      await c.connect();
      const opt = (o) => {
        const r = {};
        for (let i = 0; i < o.length; i++) {
          if (o[i] === 'EX') r.expiration = { type: 'EX', value: o[++i] };
          else if (o[i] === 'NX' || o[i] === 'XX') r.condition = o[i];
          else if (o[i] === 'GET') r.GET = true;
        }
        return r;
      };
      const lower = { set: 'set', get: 'get', getdel: 'getDel', del: 'del', expire: 'expire' };
      return {
        raw: c,
        execAbort: 'unknown command',
        close: () => c.destroy(),
        set: (k, v, ...o) => c.set(k, v, opt(o)),
        get: (k) => c.get(k),
        getdel: (k) => c.getDel(k),
        ttl: (k) => c.ttl(k),
        mget: (...k) => c.mGet(k),
        del: (...k) => c.del(k),
        info: () => c.info(),
        ping: () => c.ping(),
        multi: (cmds) => cmds.reduce((m, [n, ...a]) => (
          n === 'set' ? m.set(a[0], a[1], opt(a.slice(2))) : m[lower[n]](...a)), c.multi()).exec(),
        async scanAll(match) {
          const seen = [];
          for await (const batch of c.scanIterator({ MATCH: match, COUNT: 100 })) seen.push(...batch);
          return seen;
        },
      };
    },
  },
};

/* info()'s text as the field map the libraries' users parse it into. */
function infoFields(text) {
  const f = {};
  for (const line of String(text).split('\r\n')) {
    const i = line.indexOf(':');
    if (i > 0 && line[0] !== '#') f[line.slice(0, i)] = line.slice(i + 1);
  }
  return f;
}

async function txnChecks(t, r) {
  await r.del('t:a', 't:b', 't:c');
  await check(t, 'multi().set().set().get().exec() answers every reply', async () =>
    same(await r.multi([['set', 't:a', '1'], ['set', 't:b', '2'], ['get', 't:a']]), ['OK', 'OK', '1']));
  await check(t, 'after exec both writes are applied', async () =>
    same(await r.mget('t:a', 't:b'), ['1', '2']));
  // ioredis answers EXECABORT; node-redis rejects with the queued command's own error.
  await check(t, 'a queued unknown command aborts exec with nothing applied', async () => {
    const res = await rejects(() => {
      const m = r.raw.multi().set('t:c', 'x');  // ioredis: call(); node-redis: addCommand()
      return typeof m.call === 'function' ? m.call('NOSUCHCOMMAND').exec()
        : m.addCommand(['NOSUCHCOMMAND']).exec();
    }, r.execAbort);
    const after = await r.get('t:c');
    return [res[0] && after === null, `${res[1]}; t:c=${after}`];
  });
}

async function expiryChecks(t, r) {
  await r.del('x:cache', 'x:plain');
  await check(t, 'cache-style set(k, v, EX 300), get, ttl', async () => {
    const ok = await r.set('x:cache', 'page', 'EX', 300);
    const v = await r.get('x:cache');
    const ttl = await r.ttl('x:cache');
    return [ok === 'OK' && v === 'page' && ttl >= 299 && ttl <= 300, `${ok} ${v} ttl=${ttl}`];
  });
  await check(t, 'ttl of a key without expiry is -1, of a missing key -2', async () => {
    await r.set('x:plain', 'v');
    return same([await r.ttl('x:plain'), await r.ttl('x:missing')], [-1, -2]);
  });
  await check(t, 'set with EX 0 is refused as an invalid expire time', async () =>
    rejects(() => r.set('x:bad', 'v', 'EX', 0), 'invalid expire time'));
  await r.del('x:cache', 'x:plain');
}

async function condChecks(t, r) {
  const k = 'cond:k';
  await r.del(k, 'cond:absent');
  const steps = [
    ['set NX of a new key', () => r.set(k, '1', 'NX'), 'OK'],
    ['set NX of a present key', () => r.set(k, '2', 'NX'), null],
    ['get after set NX', () => r.get(k), '1'],
    ['set XX of an absent key', () => r.set('cond:absent', '1', 'XX'), null],
    ['set XX of a present key', () => r.set(k, '3', 'XX'), 'OK'],
    ['set GET', () => r.set(k, '4', 'GET'), '3'],
    ['set NX GET of a present key', () => r.set(k, '5', 'NX', 'GET'), '4'],
    ['getdel', () => r.getdel(k), '4'],
    ['get after getdel', () => r.get(k), null],
    ['getdel of an absent key', () => r.getdel(k), null],
  ];
  for (const [what, fn, want] of steps) {
    await check(t, `${what} == ${JSON.stringify(want)}`, async () => same(await fn(), want));
  }
}

async function scanChecks(t, r) {
  const keys = [];
  for (let i = 0; i < SCAN_KEYS; i++) keys.push(`scan:${i}`);
  for (let i = 0; i < keys.length; i += 500) {
    await r.multi(keys.slice(i, i + 500).map((key) => ['set', key, 'v']));
  }
  await check(t, `scan iteration over ${SCAN_KEYS} keys returns each exactly once`, async () => {
    const seen = await r.scanAll('scan:*');
    const uniq = new Set(seen);
    const missing = keys.filter((key) => !uniq.has(key)).length;
    return [seen.length === SCAN_KEYS && uniq.size === SCAN_KEYS && missing === 0,
      `returned ${seen.length}, distinct ${uniq.size}, missing ${missing}`];
  });
  for (let i = 0; i < keys.length; i += 500) await r.del(...keys.slice(i, i + 500));
}

async function readChecks(t, r) {
  await check(t, 'info(): used_memory > 0 and role master', async () => {
    const f = infoFields(await r.info());
    return [Number(f.used_memory) > 0 && f.role === 'master', `used_memory=${f.used_memory} role=${f.role}`];
  });
  await r.set('m:a', '1');
  await r.set('m:b', '2');
  await check(t, `mget with a ${LONG_KEY.length}-byte key gives null in its place`, async () =>
    same(await r.mget('m:a', LONG_KEY, 'm:b'), ['1', null, '2']));
  await r.del('m:a', 'm:b');
}

async function authChecks(t, lib, open, locked, password) {
  const once = async (port, opts, fn) => {
    const c = await lib.connect(port, opts);
    try {
      return await fn(c);
    } finally {
      c.close();
    }
  };
  await check(t, 'no requirepass: username default with a password connects (AUTH default x)',
    async () => same(await once(open, { username: 'default', password: 'x' }, (c) => c.ping()), 'PONG'));
  await check(t, 'no requirepass: no password connects', async () =>
    same(await once(open, {}, (c) => c.ping()), 'PONG'));
  await check(t, 'requirepass: no password is refused (NOAUTH)', async () =>
    rejects(() => once(locked, {}, (c) => c.ping()), 'NOAUTH'));
  await check(t, 'requirepass: the password connects', async () =>
    same(await once(locked, { password }, (c) => c.ping()), 'PONG'));
  await check(t, 'requirepass: username default and the password connect', async () =>
    same(await once(locked, { username: 'default', password }, (c) => c.ping()), 'PONG'));
  await check(t, 'requirepass: a wrong password is refused (WRONGPASS)', async () =>
    rejects(() => once(locked, { password: `${password}x` }, (c) => c.ping()), 'WRONGPASS'));
}

async function resp3Checks(t, open, password, locked) {
  const lib = libs['node-redis'];
  for (const [what, port, opts] of [['no requirepass: HELLO 3 AUTH default x', open, { username: 'default', password: 'x' }],
    ['requirepass: HELLO 3 AUTH default <password>', locked, { username: 'default', password }]]) {
    await check(t, `RESP3 ${what}, then set EX, get, ttl, info`, async () => {
      const c = await lib.connect(port, { ...opts, resp: 3 });
      try {
        const got = [await c.set('r3:k', 'v', 'EX', 60), await c.get('r3:k'), await c.ttl('r3:k') > 0,
          infoFields(await c.info()).role, await c.del('r3:k')];
        return same(got, ['OK', 'v', true, 'master', 1]);
      } finally {
        c.close();
      }
    });
  }
}

async function runLib(target, name, a) {
  const lib = libs[name];
  const t = `${target} ${name}`;
  console.log(`${t}: ${name} ${lib.version}`);
  const r = await lib.connect(a.open);
  try {
    await txnChecks(t, r);
    await expiryChecks(t, r);
    await condChecks(t, r);
    await scanChecks(t, r);
    await readChecks(t, r);
  } finally {
    r.close();
  }
  await authChecks(t, lib, a.open, a.locked, a.password);
  if (name === 'node-redis') await resp3Checks(t, a.open, a.password, a.locked);
}

function parseArgs(argv) {
  const a = { lib: null };
  for (let i = 0; i < argv.length; i += 2) {
    const v = argv[i + 1];
    if (v === undefined) return null;
    if (argv[i] === '--target') a.target = v;
    else if (argv[i] === '--open') a.open = Number(v);
    else if (argv[i] === '--locked') a.locked = Number(v);
    else if (argv[i] === '--password') a.password = v;
    else if (argv[i] === '--lib' && libs[v]) a.lib = v;
    else return null;
  }
  return a.target && a.open > 0 && a.locked > 0 && a.password ? a : null;
}

async function main() {
  const a = parseArgs(process.argv.slice(2));
  if (!a) {
    console.error('usage: node_checks.js --target NAME --open PORT --locked PORT --password PW [--lib ioredis|node-redis]');
    return 2;
  }
  for (const name of a.lib ? [a.lib] : Object.keys(libs)) {
    const before = failures;
    await runLib(a.target, name, a).catch((e) => report(`${a.target} ${name}`, 'run', false, e.stack));
    console.log(`${a.target} ${name}: ${failures - before} failed`);
  }
  return failures ? 1 : 0;
}

main().then((code) => process.exit(code));
