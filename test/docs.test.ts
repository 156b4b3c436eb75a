// The README and docs/ hold together: the settings the README's quick start repeats are the rows
// of docs/configuration.md, word for word, and every relative link in them leads to a file that
// exists and, when it names a section, to a heading of that file.
import fs from 'node:fs';
import path from 'node:path';
import test from 'ava';

const ROOT = path.resolve(import.meta.dirname, '..');
const read = (file: string) => fs.readFileSync(path.join(ROOT, file), 'utf8');
const PAGES = [
  'README.md',
  ...fs.readdirSync(path.join(ROOT, 'docs')).map((f) => `docs/${f}`),
].filter((file) => file.endsWith('.md'));

/** The rows of the Markdown tables in `text`, by their first cell, cells trimmed. */
function tableRows(text: string): Map<string, string[]> {
  const rows = new Map<string, string[]>();
  for (const line of text.split('\n')) {
    if (!line.startsWith('| `')) continue;
    const cells = line
      .slice(1, -1)
      .split(' | ')
      .map((cell) => cell.trim());
    rows.set(cells[0]!, cells);
  }
  return rows;
}

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens. */
function anchor(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N} _-]/gu, '')
    .replace(/ /g, '-');
}

test("the README's settings are docs/configuration.md's rows, word for word", (t) => {
  const readme = tableRows(read('README.md'));
  const reference = tableRows(read('docs/configuration.md'));
  const settings = [...readme.keys()].filter((name) => /^`[A-Z_]+`$/.test(name));
  t.true(settings.length >= 5, `the README lists ${settings.length} settings`);
  for (const name of settings) {
    t.deepEqual(readme.get(name), reference.get(name), name);
  }
});

test('every relative link of the README and docs/ leads to a file, and to a heading there', (t) => {
  let links = 0;
  for (const page of PAGES) {
    const text = read(page);
    for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
      if (/^[a-z]+:/.test(target!)) continue; // http:, https:, mailto:
      links++;
      const [file, section] = target!.split('#') as [string, string | undefined];
      const resolved = file ? path.join(path.dirname(page), file) : page;
      t.true(fs.existsSync(path.join(ROOT, resolved)), `${page}: ${target} (no ${resolved})`);
      if (section && resolved.endsWith('.md') && fs.existsSync(path.join(ROOT, resolved))) {
        const headings = [...read(resolved).matchAll(/^#+ (.*)$/gm)].map((m) => anchor(m[1]!));
        t.true(headings.includes(section), `${page}: ${target} (no such heading)`);
      }
    }
  }
  t.true(links >= 20, `${links} relative links checked`);
});
