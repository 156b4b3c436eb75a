// The ISOs with their progress: every ISO of the project from GET /isos/weld-counts (one request
// for up to 10,000 ISOs, further pages read on), searched here by number, line or area. A weld
// change on the live stream reads the counts again (at most every few seconds).
import { useEffect, useMemo, useState } from 'preact/hooks';
import { api } from './api.ts';
import { onWeldChanges } from './live.ts';
import { query, type IsoProgress, type Page } from './model.ts';
import { Heading, type Shell } from './ui.tsx';

const SHOWN = 100;

let index: Promise<IsoProgress[]> | undefined;

/** Every ISO's progress, read once and shared by the screens until `fresh` asks again. */
export function isoIndex(fresh = false): Promise<IsoProgress[]> {
  if (!index || fresh) {
    index = (async () => {
      const all: IsoProgress[] = [];
      let cursor: string | undefined;
      do {
        const { body } = await api<Page<IsoProgress>>(`/isos/weld-counts${query({ cursor })}`);
        all.push(...body.items);
        cursor = body.nextCursor ?? undefined;
      } while (cursor);
      return all;
    })();
    index.catch(() => (index = undefined));
  }
  return index;
}

export function Progress({ iso }: { iso: IsoProgress }) {
  const live = iso.total - iso.voided;
  const parts = [
    `${iso.accepted} accepted`,
    `${iso.pending} pending`,
    iso.rejected && `${iso.rejected} rejected`,
    iso.repair && `${iso.repair} in repair`,
    iso.voided && `${iso.voided} voided`,
  ].filter(Boolean);
  return (
    <span class="progress">
      {/* The bar shows what the words say: a screen reader reads the words once. */}
      <progress max={Math.max(live, 1)} value={iso.accepted} aria-hidden="true" />
      <span class="counts">
        {parts.join(' · ')} (of {live} weld{live === 1 ? '' : 's'})
      </span>
    </span>
  );
}

export function IsoList({ shell }: { shell: Shell }) {
  const [isos, setIsos] = useState<IsoProgress[] | undefined>();
  const [error, setError] = useState('');
  const [search, setSearch] = useState('');
  const [shown, setShown] = useState(SHOWN);

  useEffect(
    () => void isoIndex(true).then(setIsos, (e: Error) => setError(e.message)),
    [shell.revision],
  );

  // Live: the counts are read again, at most every two seconds, while welds change.
  useEffect(() => onWeldChanges(() => void isoIndex(true).then(setIsos, () => {}), 2000), []);

  const matches = useMemo(() => {
    const words = search.toLowerCase().split(/\s+/).filter(Boolean);
    return (isos ?? []).filter((iso) => {
      const text = `${iso.isoNumber} ${iso.lineNumber} ${iso.area ?? ''}`.toLowerCase();
      return words.every((word) => text.includes(word));
    });
  }, [isos, search]);

  return (
    <>
      <Heading>ISOs</Heading>
      <div class="filters">
        <div class="field">
          <label for="iso-search">Search ISOs</label>
          <input
            id="iso-search"
            type="search"
            value={search}
            placeholder="ISO number, line or area"
            onInput={(e) => {
              setSearch(e.currentTarget.value);
              setShown(SHOWN);
            }}
          />
        </div>
      </div>
      {error && (
        <p class="notice problem" role="alert">
          The ISOs could not be read: {error}
          {!shell.online && ' (offline)'}
        </p>
      )}
      {!isos && !error && <p aria-busy="true">Loading ISOs…</p>}
      {isos && (
        <>
          <p class="hint" role="status">
            {matches.length} of {isos.length} ISOs
          </p>
          <table class="cards">
            <caption class="sr-only">ISOs and their progress</caption>
            <thead>
              <tr>
                <th scope="col">ISO</th>
                <th scope="col">Line</th>
                <th scope="col">Area</th>
                <th scope="col">Progress</th>
              </tr>
            </thead>
            <tbody>
              {matches.slice(0, shown).map((iso) => (
                <tr key={iso.isoId}>
                  <td data-label="ISO">
                    <a href={`#/welds${query({ isoId: iso.isoId })}`}>{iso.isoNumber}</a>
                  </td>
                  <td data-label="Line">{iso.lineNumber}</td>
                  <td data-label="Area">{iso.area ?? '—'}</td>
                  <td data-label="Progress">
                    <Progress iso={iso} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
          {matches.length === 0 && <p>No ISO matches “{search}”.</p>}
          {matches.length > shown && (
            <div class="row-actions">
              <button type="button" class="secondary" onClick={() => setShown(shown + SHOWN)}>
                Show more ISOs ({matches.length - shown} more)
              </button>
            </div>
          )}
        </>
      )}
    </>
  );
}
