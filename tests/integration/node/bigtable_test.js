// The official Node client (@google-cloud/bigtable, pinned in package.json) against a
// Bigtable-API server: table admin, writes, reads with filters, check-and-mutate,
// read-modify-write, sampleRowKeys, deletes. Run by node_test.sh, which starts the server and
// sets:
//   BIGTABLE_EMULATOR_HOST  host:port of the server
//   TESSERA_NODE_MODULES    the node_modules folder holding the client
//   TESSERA_SERVER_KIND     tessera | emulator (the emulator's known departures from the API
//                           are accepted only under "emulator"; each is explained where used)
//   TESSERA_ADMIN_HOST      host:port that table and instance admin go to (node 1 of the
//                           cluster variant; on one server the same as BIGTABLE_EMULATOR_HOST)
//   TESSERA_TLS_CA          (the TLS variant) the CA file: the client connects over TLS,
//                           verifying the server against it, as to Cloud Bigtable — not in
//                           emulator mode, which is plaintext only
'use strict';

const test = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');

const modules = process.env.TESSERA_NODE_MODULES;
if (!modules || !process.env.BIGTABLE_EMULATOR_HOST) {
  console.error('TESSERA_NODE_MODULES and BIGTABLE_EMULATOR_HOST must be set (run node_test.sh)');
  process.exit(2);
}
const {Bigtable} = require(require.resolve('@google-cloud/bigtable', {paths: [modules]}));
const emulator = process.env.TESSERA_SERVER_KIND === 'emulator';

const serverHost = process.env.BIGTABLE_EMULATOR_HOST;
const tlsCa = process.env.TESSERA_TLS_CA;
let bigtable;
if (tlsCa) {
  // The client's own TLS path: an endpoint and channel credentials instead of emulator mode.
  const grpc = require(require.resolve('@grpc/grpc-js', {paths: [modules]}));
  const fs = require('node:fs');
  delete process.env.BIGTABLE_EMULATOR_HOST;
  const [apiEndpoint, port] = serverHost.split(':');
  bigtable = new Bigtable({
    projectId: 'p',
    apiEndpoint,
    port: Number(port),
    sslCreds: grpc.credentials.createSsl(fs.readFileSync(tlsCa)),
  });
} else {
  bigtable = new Bigtable({projectId: 'p'});
}
// The client has one endpoint option for all three APIs. It makes each gRPC client lazily, at
// its first call, from bigtable.options[<client>], so the admin ones are pointed elsewhere here.
const adminHost = process.env.TESSERA_ADMIN_HOST;
if (adminHost && adminHost !== serverHost) {
  const [servicePath, port] = adminHost.split(':');
  for (const client of ['BigtableTableAdminClient', 'BigtableInstanceAdminClient']) {
    Object.assign(bigtable.options[client], {servicePath, port: Number(port)});
  }
}
const instance = bigtable.instance('i');

// gRPC status codes the tests expect.
const NOT_FOUND = 5;
const INVALID_ARGUMENT = 3;
const ALREADY_EXISTS = 6;

// Rows as plain data, independent of the order families come in (unspecified by the API):
// [{key, cells: [[family, qualifier, timestampMicros, value, labels?]...]}], families sorted
// by name, then qualifiers and cells in the order the server sent them.
function flatten(rows) {
  return rows.map(row => {
    const cells = [];
    for (const family of Object.keys(row.data).sort()) {
      for (const [qualifier, versions] of Object.entries(row.data[family])) {
        for (const c of versions) {
          const cell = [family, qualifier, Number(c.timestamp), c.value];
          if (c.labels && c.labels.length > 0) cell.push(c.labels);
          cells.push(cell);
        }
      }
    }
    return {key: row.id, cells};
  });
}

async function read(table, options = {}) {
  const [rows] = await table.getRows(options);
  return flatten(rows);
}

function keys(rows) {
  return rows.map(r => r.key);
}

// A fresh table per test: deleted first if a previous run left it behind.
// Split keys are bytes: the client passes strings to protobufjs, which would read them as
// base64, so they go as Buffers.
async function freshTable(id, options) {
  const table = instance.table(id);
  if (options && options.splits) options = {...options, splits: options.splits.map(s => Buffer.from(s))};
  const [exists] = await table.exists();
  if (exists) await table.delete();
  await table.create(options);
  return table;
}

// The fixture most read tests use. cf1 keeps 3 versions, cf2 everything.
async function filled(id) {
  const table = await freshTable(id, {
    families: [
      {name: 'cf1', rule: {versions: 3}},
      {name: 'cf2'},
    ],
    splits: ['m'],
  });
  await table.insert([
    {key: 'apple', data: {cf1: {a: {value: 'red', timestamp: 1000}, b: {value: 'round', timestamp: 1000}}}},
    {key: 'banana', data: {cf1: {a: {value: 'yellow', timestamp: 2000}}, cf2: {x: {value: 'long', timestamp: 2000}}}},
    {key: 'cherry', data: {cf2: {x: {value: 'small', timestamp: 3000}}}},
    {key: 'melon', data: {cf1: {a: {value: 'green', timestamp: 4000}}}},
    {key: 'mango', data: {cf1: {b: {value: 'oval', timestamp: 5000}}}},
    {key: 'zucchini', data: {cf2: {y: {value: 'veg', timestamp: 6000}}}},
  ]);
  // Three versions of banana cf1:a.
  await table.insert([{key: 'banana', data: {cf1: {a: {value: 'green', timestamp: 1000}}}}]);
  await table.insert([{key: 'banana', data: {cf1: {a: {value: 'brown', timestamp: 3000}}}}]);
  return table;
}

const APPLE = {key: 'apple', cells: [['cf1', 'a', 1000, 'red'], ['cf1', 'b', 1000, 'round']]};
const BANANA = {
  key: 'banana',
  cells: [
    ['cf1', 'a', 3000, 'brown'],
    ['cf1', 'a', 2000, 'yellow'],
    ['cf1', 'a', 1000, 'green'],
    ['cf2', 'x', 2000, 'long'],
  ],
};
const CHERRY = {key: 'cherry', cells: [['cf2', 'x', 3000, 'small']]};
const MANGO = {key: 'mango', cells: [['cf1', 'b', 5000, 'oval']]};
const MELON = {key: 'melon', cells: [['cf1', 'a', 4000, 'green']]};
const ZUCCHINI = {key: 'zucchini', cells: [['cf2', 'y', 6000, 'veg']]};
const ALL = [APPLE, BANANA, CHERRY, MANGO, MELON, ZUCCHINI];

test('create a table with families, GC rules and splits; getTables; getFamilies; exists', async () => {
  const table = await freshTable('node_admin', {
    families: [
      {name: 'versions', rule: {versions: 2}},
      {name: 'aged', rule: {age: {seconds: 3600}}},
      {name: 'both', rule: {versions: 5, age: {seconds: 86400}, union: true}},
      {name: 'forever'},
    ],
    splits: ['g', 'p'],
  });
  const [tables] = await instance.getTables();
  assert.ok(tables.map(t => t.id).includes('node_admin'), 'getTables lists the new table');
  const [exists] = await table.exists();
  assert.equal(exists, true);

  const [families] = await table.getFamilies();
  const rules = Object.fromEntries(families.map(f => [f.id, f.metadata.gcRule]));
  assert.deepEqual(Object.keys(rules).sort(), ['aged', 'both', 'forever', 'versions']);
  assert.equal(rules.versions.maxNumVersions, 2);
  assert.equal(Number(rules.aged.maxAge.seconds), 3600);
  assert.equal(rules.both.union.rules.length, 2);
  assert.ok(rules.forever === null || rules.forever.rule === undefined, 'no GC rule');

  // Families: create, change the rule, delete.
  await table.createFamily('added', {rule: {versions: 1}});
  const family = table.family('added');
  await family.setMetadata({rule: {versions: 4}});
  const [meta] = await family.getMetadata();
  assert.equal(meta.gcRule.maxNumVersions, 4);
  await family.delete();
  const [after] = await table.getFamilies();
  assert.ok(!after.map(f => f.id).includes('added'), 'dropped family is gone');

  await assert.rejects(table.createFamily('versions'), err => err.code === ALREADY_EXISTS);
  await assert.rejects(instance.createTable('node_admin'), err => err.code === ALREADY_EXISTS);
  await table.delete();
});

test('insert and get', async () => {
  const table = await filled('node_get');
  const [row] = await table.row('banana').get();
  assert.deepEqual(row.data.cf1.a.map(c => c.value), ['brown', 'yellow', 'green']);
  assert.deepEqual(row.data.cf1.a.map(c => Number(c.timestamp)), [3000, 2000, 1000]);
  assert.equal(row.data.cf2.x[0].value, 'long');

  const [cols] = await table.row('banana').get(['cf2:x']);
  assert.deepEqual(cols, {cf2: {x: [{value: 'long', labels: [], timestamp: '2000'}]}});

  await assert.rejects(table.row('nosuch').get(), err => err.name === 'RowError' && /Unknown row: nosuch/.test(err.message));
  const [exists] = await table.row('apple').exists();
  assert.equal(exists, true);
  const [missing] = await table.row('nosuch').exists();
  assert.equal(missing, false);
  await table.delete();
});

test('createReadStream: all rows, keys, ranges, prefix, limit', async () => {
  const table = await filled('node_scan');
  assert.deepEqual(await read(table), ALL);
  // createReadStream itself, as a stream.
  const streamed = await new Promise((resolve, reject) => {
    const got = [];
    table
      .createReadStream({start: 'banana', end: 'mango'})
      .on('error', reject)
      .on('data', row => got.push(row.id))
      .on('end', () => resolve(got));
  });
  assert.deepEqual(streamed, ['banana', 'cherry', 'mango'], 'start/end are both inclusive in Node');

  assert.deepEqual(await read(table, {keys: ['melon', 'apple', 'nosuch']}), [APPLE, MELON]);
  assert.deepEqual(keys(await read(table, {prefix: 'm'})), ['mango', 'melon']);
  assert.deepEqual(keys(await read(table, {prefixes: ['a', 'z']})), ['apple', 'zucchini']);
  assert.deepEqual(keys(await read(table, {limit: 2})), ['apple', 'banana']);
  assert.deepEqual(keys(await read(table, {prefix: 'm', limit: 1})), ['mango']);
  assert.deepEqual(
    keys(await read(table, {ranges: [{start: 'b', end: 'c'}, {start: {value: 'mango', inclusive: false}}]})),
    ['banana', 'melon', 'zucchini']);
  assert.deepEqual(
    keys(await read(table, {ranges: [{start: 'apple', end: {value: 'cherry', inclusive: false}}]})),
    ['apple', 'banana']);
  assert.deepEqual(await read(table, {prefix: 'nothing'}), []);
  await table.delete();
});

test('createReadStream with filters', async () => {
  const table = await filled('node_filter');
  // family
  assert.deepEqual(await read(table, {filter: [{family: 'cf2'}]}), [
    {key: 'banana', cells: [['cf2', 'x', 2000, 'long']]},
    CHERRY,
    ZUCCHINI,
  ]);
  // column (qualifier regex)
  assert.deepEqual(keys(await read(table, {filter: [{column: 'b'}]})), ['apple', 'mango']);
  // family + column chain
  assert.deepEqual(await read(table, {filter: [{family: 'cf1'}, {column: 'a'}, {column: {cellLimit: 1}}]}), [
    {key: 'apple', cells: [['cf1', 'a', 1000, 'red']]},
    {key: 'banana', cells: [['cf1', 'a', 3000, 'brown']]},
    MELON,
  ]);
  // value regex: full match
  assert.deepEqual(keys(await read(table, {filter: [{value: 'gr.*'}]})), ['banana', 'melon']);
  assert.deepEqual(keys(await read(table, {filter: [{value: 'gr'}]})), [], 'value regex must match fully');
  // cells-per-column limit
  const latest = await read(table, {keys: ['banana'], filter: [{column: {cellLimit: 2}}]});
  assert.deepEqual(latest, [{key: 'banana', cells: [['cf1', 'a', 3000, 'brown'], ['cf1', 'a', 2000, 'yellow'], ['cf2', 'x', 2000, 'long']]}]);
  // row key regex
  assert.deepEqual(keys(await read(table, {filter: [{row: /^.*an.*$/}]})), ['banana', 'mango']);
  // timestamp range [start, end)
  assert.deepEqual(keys(await read(table, {filter: [{time: {start: new Date(2), end: new Date(4)}}]})),
    ['banana', 'cherry']);
  // value range
  assert.deepEqual(keys(await read(table, {filter: [{value: {start: 'r', end: 's'}}]})),
    ['apple'], 'red and round are in [r, s)');
  // column range within a family
  assert.deepEqual(keys(await read(table, {filter: [{column: {family: 'cf2', start: 'y', end: 'z'}}]})),
    ['zucchini']);
  // strip values
  assert.deepEqual(await read(table, {keys: ['cherry'], filter: [{value: {strip: true}}]}),
    [{key: 'cherry', cells: [['cf2', 'x', 3000, '']]}]);
  // cells per row within one family (deterministic: the emulator's order across families is
  // not, bigtable-api.md §5.4): limit and offset
  assert.deepEqual(await read(table, {keys: ['banana'], filter: [{family: 'cf1'}, {row: {cellLimit: 2}}]}),
    [{key: 'banana', cells: [['cf1', 'a', 3000, 'brown'], ['cf1', 'a', 2000, 'yellow']]}]);
  assert.deepEqual(await read(table, {keys: ['banana'], filter: [{family: 'cf1'}, {row: {cellOffset: 2}}]}),
    [{key: 'banana', cells: [['cf1', 'a', 1000, 'green']]}]);
  // interleave with labels: duplicates are kept
  const inter = await read(table, {
    keys: ['apple'],
    filter: [{interleave: [[{column: 'a'}, {label: 'left'}], [{family: 'cf1'}, {label: 'right'}]]}],
  });
  assert.equal(inter.length, 1);
  const labelled = inter[0].cells.map(c => `${c[1]}/${c[4]}`).sort();
  assert.deepEqual(labelled, ['a/left', 'a/right', 'b/right']);
  // condition: both branches
  const cond = {
    condition: {
      test: [{column: 'x'}],
      pass: [{family: 'cf2'}],
      fail: [{column: 'a'}],
    },
  };
  assert.deepEqual(await read(table, {keys: ['banana', 'melon'], filter: [cond]}), [
    {key: 'banana', cells: [['cf2', 'x', 2000, 'long']]},
    MELON,
  ]);
  // pass all / block all
  assert.deepEqual(await read(table, {filter: [{all: true}]}), ALL);
  assert.deepEqual(await read(table, {filter: [{all: false}]}), []);
  // a bad regex is INVALID_ARGUMENT
  await assert.rejects(read(table, {filter: [{row: '('}]}), err => err.code === INVALID_ARGUMENT);
  await table.delete();
});

test('row.filter: check-and-mutate, both branches', async () => {
  const table = await filled('node_cam');
  const row = table.row('apple');
  const [matched] = await row.filter([{column: 'a'}, {value: 'red'}], {
    onMatch: [{method: 'insert', data: {cf2: {seen: {value: 'yes', timestamp: 7000}}}}],
    onNoMatch: [{method: 'insert', data: {cf2: {seen: {value: 'no', timestamp: 7000}}}}],
  });
  assert.equal(matched, true);
  const [notMatched] = await table.row('melon').filter([{value: 'red'}], {
    onMatch: [{method: 'delete'}],
    onNoMatch: [{method: 'delete', data: ['cf1:a']}, {method: 'insert', data: {cf2: {seen: {value: 'no', timestamp: 7000}}}}],
  });
  assert.equal(notMatched, false);
  assert.deepEqual(await read(table, {keys: ['apple', 'melon']}), [
    {key: 'apple', cells: [['cf1', 'a', 1000, 'red'], ['cf1', 'b', 1000, 'round'], ['cf2', 'seen', 7000, 'yes']]},
    {key: 'melon', cells: [['cf2', 'seen', 7000, 'no']]},
  ]);
  // A missing row matches nothing: the false branch runs and creates it.
  const [created] = await table.row('newrow').filter([{all: true}], {
    onNoMatch: [{method: 'insert', data: {cf1: {a: {value: 'made', timestamp: 8000}}}}],
  });
  assert.equal(created, false);
  assert.deepEqual(await read(table, {keys: ['newrow']}), [{key: 'newrow', cells: [['cf1', 'a', 8000, 'made']]}]);
  await table.delete();
});

test('increment and append (read-modify-write)', async () => {
  const table = await freshTable('node_rmw', {families: [{name: 'cf1'}]});
  const row = table.row('counter');
  const [v1] = await row.increment('cf1:n');
  assert.equal(v1, 1);
  const [v2] = await row.increment('cf1:n', 41);
  assert.equal(v2, 42);
  const [v3] = await row.increment('cf1:n', -50);
  assert.equal(v3, -8);

  const [resp] = await row.createRules([
    {column: 'cf1:s', append: 'abc'},
    {column: 'cf1:s', append: 'def'},
    {column: 'cf1:n', increment: 8},
  ]);
  const result = Object.fromEntries(resp.row.families[0].columns.map(c => [c.qualifier.toString(), c.cells]));
  assert.equal(result.s.length, 1, 'one cell per modified column');
  assert.equal(Buffer.from(result.s[0].value).toString(), 'abcdef');
  assert.equal(Buffer.from(result.n[0].value).readBigInt64BE(), 0n);

  const [got] = await row.get(['cf1:s', 'cf1:n']);
  assert.equal(got.cf1.s[0].value, 'abcdef');
  assert.equal(got.cf1.n[0].value, 0);

  // Increment of a value that is not 8 bytes fails and changes nothing.
  await table.insert([{key: 'counter', data: {cf1: {bad: {value: 'xyz', timestamp: 1000}}}}]);
  await assert.rejects(row.increment('cf1:bad', 1), err => emulator || err.code === INVALID_ARGUMENT || err.code === 9);
  // Unknown family.
  await assert.rejects(row.increment('nofam:n', 1), err => emulator || err.code === NOT_FOUND);
  await table.delete();
});

test('sampleRowKeys', async () => {
  const table = await freshTable('node_sample', {families: [{name: 'cf1'}], splits: ['k100', 'k200']});
  const entries = [];
  for (let i = 0; i < 300; i++) {
    entries.push({key: `k${String(i).padStart(3, '0')}`, data: {cf1: {v: {value: 'x'.repeat(100), timestamp: 1000}}}});
  }
  await table.insert(entries);
  const [samples] = await table.sampleRowKeys();
  assert.ok(samples.length >= 1, 'at least the end-of-table sample');
  let previousOffset = -1;
  let previousKey = null;
  for (const s of samples) {
    const offset = Number(s.offset);
    assert.ok(offset >= previousOffset, 'offsets do not decrease');
    previousOffset = offset;
    const key = Buffer.from(s.key).toString();
    if (previousKey !== null && key !== '') assert.ok(key > previousKey, 'keys increase');
    if (key !== '') previousKey = key;
  }
  await table.delete();
});

test('deletes: cells, families, rows, prefixes, truncate', async () => {
  const table = await filled('node_delete');
  await table.row('apple').deleteCells(['cf1:a']);
  assert.deepEqual(await read(table, {keys: ['apple']}), [{key: 'apple', cells: [['cf1', 'b', 1000, 'round']]}]);
  await table.row('banana').deleteCells(['cf2']);
  assert.deepEqual(await read(table, {keys: ['banana']}),
    [{key: 'banana', cells: BANANA.cells.filter(c => c[0] === 'cf1')}]);
  // A time range deletes only the versions in [start, end).
  await table.mutate({key: 'banana', method: 'delete', data: [{column: 'cf1:a', time: {start: new Date(2), end: new Date(3)}}]});
  assert.deepEqual(await read(table, {keys: ['banana']}),
    [{key: 'banana', cells: [['cf1', 'a', 3000, 'brown'], ['cf1', 'a', 1000, 'green']]}]);
  await table.row('cherry').delete();
  assert.deepEqual(keys(await read(table)), ['apple', 'banana', 'mango', 'melon', 'zucchini']);
  await table.deleteRows('m');
  assert.deepEqual(keys(await read(table)), ['apple', 'banana', 'zucchini']);
  await table.truncate();
  assert.deepEqual(await read(table), []);
  // The table and its families survive truncate.
  await table.insert([{key: 'again', data: {cf1: {a: {value: 'v', timestamp: 1000}}}}]);
  assert.deepEqual(await read(table), [{key: 'again', cells: [['cf1', 'a', 1000, 'v']]}]);
  await table.delete();
});

test('errors: unknown table, unknown family', async () => {
  const table = instance.table('node_no_such_table');
  await assert.rejects(read(table), err => err.code === NOT_FOUND);
  await assert.rejects(table.getFamilies(), err => err.code === NOT_FOUND);
  await assert.rejects(table.delete(), err => err.code === NOT_FOUND);
  const [exists] = await table.exists();
  assert.equal(exists, false);

  const real = await freshTable('node_errors', {families: [{name: 'cf1'}]});
  if (!emulator) {
    // The emulator answers an unknown family in MutateRows with a per-entry INTERNAL, which the
    // Node client retries until its deadline (bigtable-api.md §5.3, §6.3); the API says
    // NOT_FOUND, a permanent error.
    await assert.rejects(
      real.insert([{key: 'r', data: {nofam: {a: {value: 'v', timestamp: 1000}}}}], {gaxOptions: {timeout: 10000}}),
      err => {
        const code = err.code ?? (err.errors && err.errors[0] && err.errors[0].code);
        return code === NOT_FOUND;
      });
  }
  await real.delete();
  const [tables] = await instance.getTables();
  assert.ok(!tables.map(t => t.id).includes('node_errors'), 'deleted table is not listed');
});
