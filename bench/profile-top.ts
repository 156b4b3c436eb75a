// The functions a CPU profile (node --cpu-prof, see bench/run.ts --profile) spent most time in,
// by self time, and the same grouped by package: where the server's CPU goes, as text.
//
//   node bench/profile-top.ts bench/.data/profiles/<file>.cpuprofile [how many, default 30]
import fs from 'node:fs';

interface Node {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
}
const file = process.argv[2];
if (!file) throw new Error('usage: node bench/profile-top.ts <file.cpuprofile> [n]');
const profile = JSON.parse(fs.readFileSync(file, 'utf8')) as {
  nodes: Node[];
  samples: number[];
  timeDeltas: number[];
};
const count = Number(process.argv[3] ?? 30);

const nodes = new Map(profile.nodes.map((n) => [n.id, n]));
const byFunction = new Map<string, number>();
const byPackage = new Map<string, number>();
let total = 0;
profile.samples.forEach((id, i) => {
  const micros = profile.timeDeltas[i] ?? 0;
  const { functionName, url, lineNumber } = nodes.get(id)!.callFrame;
  const where = url.replace(/^file:\/\/.*?\/(node_modules\/|(?=server|rest-adapter|db))/, '');
  const name = `${functionName || '(anonymous)'} ${where}:${lineNumber + 1}`;
  byFunction.set(name, (byFunction.get(name) ?? 0) + micros);
  const pkg =
    /node_modules\/((@[^/]+\/)?[^/]+)/.exec(url)?.[1] ??
    (url.startsWith('node:')
      ? 'node'
      : url
        ? url.replace(/^.*?\/(server|rest-adapter|db)\/.*$/, '$1')
        : functionName);
  byPackage.set(pkg, (byPackage.get(pkg) ?? 0) + micros);
  total += micros;
});
const print = (title: string, map: Map<string, number>) => {
  console.log(`\n${title}`);
  for (const [name, micros] of [...map].sort((a, b) => b[1] - a[1]).slice(0, count)) {
    console.log(`${((100 * micros) / total).toFixed(1).padStart(5)} %  ${name}`);
  }
};
print('self time by function', byFunction);
print('self time by package', byPackage);
