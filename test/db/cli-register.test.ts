// weld-admin import welds / export welds against a real database: a dry run writes nothing, an
// import writes all and is recorded with no user (the CLI), a file with errors exits 1 naming
// each by line and writes nothing, the export is the register as CSV (one ISO with --iso), and
// an unknown tenant or a missing file exit 1. Output to a pipe has no progress lines.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import test from 'ava';
import { migratedDatabase, superuserQuery } from '../helpers/database.ts';
import { runCli } from '../helpers/server.ts';

const HEADER =
  'isoNumber,lineNumber,weldNumber,type,size,schedule,wallThickness,material,welderStamp,wpsNumber,wpsRevision,weldedOn';

test('import welds (dry run, then for real, then a bad file), export welds, and the refusals', async (t) => {
  const { rootUrl } = await migratedDatabase(t);
  const env = { DATABASE_URL: rootUrl };
  t.is((await runCli(['tenant', 'add', 'acme', '--origin', 'http://acme.test'], env)).code, 0);
  await superuserQuery(
    rootUrl,
    `insert into weld_public.welders (tenant_id, stamp, name)
     select id, 'W-1', 'Ann' from weld_public.tenants where slug = 'acme'`,
  );
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cli-register-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const file = (name: string, ...rows: string[]) => {
    const at = path.join(dir, name);
    fs.writeFileSync(at, [HEADER, ...rows].join('\n') + '\n');
    return at;
  };
  const good = file(
    'good.csv',
    'ISO-1,L-1,W1,BW,2,40,0.154,A106-B,W-1,,,2026-03-02',
    'ISO-2,L-1,W1,SW,1,80,,,,,,',
  );
  const holdings = async () =>
    (
      await superuserQuery<{ welds: number; imports: number; by: string | null }>(
        rootUrl,
        `select (select count(*) from weld_public.welds)::int as welds,
                (select count(*) from weld_hidden.imports)::int as imports,
                (select max(imported_by::text) from weld_hidden.imports) as by`,
      )
    )[0]!;

  const dry = await runCli(['import', 'welds', 'acme', good, '--dry-run'], env);
  t.is(dry.code, 0, dry.output);
  t.regex(
    dry.stdout,
    /^dry run of .*good\.csv for acme: 2 rows: 2 created, 0 updated, 0 unchanged, 2 ISOs created; nothing was written/m,
  );
  t.is(dry.stderr, '', 'no progress lines in a pipe for a short job');
  t.deepEqual(await holdings(), { welds: 0, imports: 0, by: null });

  const done = await runCli(['import', 'welds', 'acme', good], env);
  t.is(done.code, 0, done.output);
  t.regex(
    done.stdout,
    /^imported .*good\.csv into acme: 2 rows: 2 created, .* \(import [0-9a-f-]{36}\)$/m,
  );
  t.deepEqual(await holdings(), { welds: 2, imports: 1, by: null });

  const bad = file(
    'bad.csv',
    'ISO-1,L-1,W1,BW,2,40,0.154,A106-C,W-1,,,2026-03-02',
    'ISO-3,L-1,W1,XX,2,,,,W-9,,,',
  );
  const refused = await runCli(['import', 'welds', 'acme', bad], env);
  t.is(refused.code, 1);
  t.deepEqual(refused.stderr.trim().split('\n'), [
    'line 3, type: must be one of BW, SW, FW, BR, TW, MW, LW ("XX")',
    'line 3, welderStamp: no welder has this stamp ("W-9")',
    'weld-admin: 2 errors; nothing was imported',
  ]);
  t.deepEqual(await holdings(), { welds: 2, imports: 1, by: null });

  const exported = await runCli(['export', 'welds', 'acme'], env);
  t.is(exported.code, 0, exported.output);
  t.deepEqual(exported.stdout.split('\n'), [
    `\uFEFF${HEADER},baseMetal1PNumber,baseMetal2PNumber,preheatF,status,repairCycle,acceptance,version`,
    'ISO-1,L-1,W1,BW,2,40,0.154,A106-B,W-1,,,2026-03-02,,,,PENDING,0,,1',
    'ISO-2,L-1,W1,SW,1,80,,,,,,,,,,PENDING,0,,1',
    '',
  ]);
  t.regex(exported.stderr, /^exported 2 welds of acme$/m);
  const one = await runCli(['export', 'welds', 'acme', '--iso', 'ISO-2'], env);
  t.is(one.stdout.trim().split('\n').length, 2);
  t.regex(one.stdout, /^ISO-2,/m);

  // The export, imported back, changes nothing.
  const again = path.join(dir, 'again.csv');
  fs.writeFileSync(again, exported.stdout);
  const back = await runCli(['import', 'welds', 'acme', again], env);
  t.regex(back.stdout, /2 rows: 0 created, 0 updated, 2 unchanged/);

  const unknown = await runCli(['import', 'welds', 'nobody', good], env);
  t.is(unknown.code, 1);
  t.regex(unknown.stderr, /no tenant 'nobody'/);
  const missing = await runCli(['import', 'welds', 'acme', path.join(dir, 'nope.csv')], env);
  t.is(missing.code, 1);
  t.regex(missing.stderr, /cannot read .*nope\.csv/);
  const usage = await runCli(['import', 'welds', 'acme'], env);
  t.is(usage.code, 2);
});
