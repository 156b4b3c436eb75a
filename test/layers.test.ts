// The direction of imports, read from the source: db/ at the bottom knows nothing of HTTP; the
// HTTP toolkit (rest-adapter/http) knows db/ and nothing above it; the adapters (rest-adapter/)
// use both and export routes; server/ composes them on top, and only server/routes.ts gathers
// the adapters. The web app (app/) runs in the
// browser and reaches the service by HTTP only: it imports nothing of the server's, and the
// server only builds it (server/pwa.ts names its folder, imports none of it). No import cycle.
import fs from 'node:fs';
import path from 'node:path';
import test from 'ava';

const ROOT = path.resolve(import.meta.dirname, '..');
const LAYERED = ['db', 'server', 'rest-adapter', 'app'];

/** Every project module, with the project modules it imports (relative paths from ROOT). */
function importGraph(): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  const visit = (dir: string) => {
    for (const entry of fs.readdirSync(path.join(ROOT, dir), { withFileTypes: true })) {
      const relative = path.join(dir, entry.name);
      if (entry.isDirectory()) visit(relative);
      else if (/\.tsx?$/.test(entry.name)) {
        const text = fs.readFileSync(path.join(ROOT, relative), 'utf8');
        const targets = [...text.matchAll(/^(?:import|export)[^'"]*?from '(\.[^']+)'/gm)].map((m) =>
          path.join(path.dirname(relative), m[1]!),
        );
        graph.set(relative, targets);
      }
    }
  };
  LAYERED.forEach(visit);
  return graph;
}

const graph = importGraph();
const importsOf = (prefix: string) =>
  [...graph]
    .filter(([file]) => file.startsWith(prefix))
    .flatMap(([file, targets]) => targets.map((target) => `${file} -> ${target}`));

test('the graph was read (a broken pattern would make every rule pass)', (t) => {
  t.true(graph.size > 20);
  t.true(graph.get('server/main.ts')!.includes('server/routes.ts'));
});

test('db/ imports nothing from server/ or rest-adapter/', (t) => {
  t.deepEqual(
    importsOf('db/').filter((edge) => /-> (server|rest-adapter)\//.test(edge)),
    [],
  );
});

test('the HTTP toolkit (rest-adapter/http) imports only itself and db/', (t) => {
  const toolkit = importsOf('rest-adapter/http/');
  t.true(toolkit.length > 0);
  t.deepEqual(
    toolkit.filter((edge) => !/-> (db|rest-adapter\/http)\//.test(edge)),
    [],
  );
});

test('rest-adapter/ imports db/ and itself, nothing of server/', (t) => {
  t.deepEqual(
    importsOf('rest-adapter/').filter((edge) => !/-> (db|rest-adapter)\//.test(edge)),
    [],
  );
});

test('the web app imports only itself, and nothing imports it', (t) => {
  const app = importsOf('app/');
  t.true(app.length > 5);
  t.deepEqual(
    app.filter((edge) => !/-> app\//.test(edge)),
    [],
  );
  t.deepEqual(
    [...graph]
      .filter(([file]) => !file.startsWith('app/'))
      .flatMap(([file, targets]) =>
        targets.filter((x) => x.startsWith('app/')).map((x) => `${file} -> ${x}`),
      ),
    [],
  );
});

test('only server/routes.ts gathers the REST adapters; the rest of server/ uses the toolkit', (t) => {
  const users = [...graph]
    .filter(([file]) => !file.startsWith('rest-adapter/'))
    .filter(([, targets]) =>
      targets.some(
        (target) => target.startsWith('rest-adapter/') && !target.startsWith('rest-adapter/http/'),
      ),
    )
    .map(([file]) => file);
  t.deepEqual(users, ['server/routes.ts']);
});

test('nothing below server/ imports it (the composition is on top)', (t) => {
  t.deepEqual(
    [...graph]
      .filter(([file]) => !file.startsWith('server/'))
      .flatMap(([file, targets]) =>
        targets.filter((x) => x.startsWith('server/')).map((x) => `${file} -> ${x}`),
      ),
    [],
  );
});

test('no module imports itself through a cycle', (t) => {
  const cycles: string[] = [];
  const state = new Map<string, 'open' | 'done'>();
  const walk = (file: string, trail: string[]) => {
    if (state.get(file) === 'done') return;
    if (state.get(file) === 'open') {
      cycles.push([...trail.slice(trail.indexOf(file)), file].join(' -> '));
      return;
    }
    state.set(file, 'open');
    for (const target of graph.get(file) ?? []) walk(target, [...trail, file]);
    state.set(file, 'done');
  };
  for (const file of graph.keys()) walk(file, []);
  t.deepEqual(cycles, []);
});

test('every database connection handles its errors (made by db/database.ts, or handled where made)', (t) => {
  // An idle connection that loses its server emits 'error'; unhandled, that ends the process (a
  // test run once died of it). connectClient and createPool attach a handler; the few modules
  // that construct their own connection must attach one per connection they make.
  const offenders: string[] = [];
  const visit = (dir: string) => {
    for (const entry of fs.readdirSync(path.join(ROOT, dir), { withFileTypes: true })) {
      const relative = path.join(dir, entry.name);
      if (entry.isDirectory()) visit(relative);
      else if (entry.name.endsWith('.ts') && relative !== 'test/layers.test.ts') {
        const text = fs.readFileSync(path.join(ROOT, relative), 'utf8');
        const made = text.match(/new pg\.(Client|Pool)\(/g)?.length ?? 0;
        const handled = text.match(/\.on\('error'/g)?.length ?? 0;
        if (made > handled) offenders.push(`${relative}: ${made} made, ${handled} handled`);
      }
    }
  };
  [...LAYERED, 'test', 'bench'].forEach(visit);
  t.deepEqual(offenders, []);
});
