// Welds: the list (GET /welds with its filters, keyset pages read on as the inspector scrolls;
// an ISO's welds under its drawing, weld-map.tsx) and one weld (its fields, the status change,
// its history, NDT records, inspections and the code rules' checks). Both follow the live
// stream: a weld a colleague changes is redrawn at once.
//
// A status change offers only what the tenant's rules let this user do from the weld's status
// (GET /weld-transitions), sends If-Match with the ETag the weld was read with and the CSRF
// token (api.ts), and when the weld changed meanwhile (412) shows it as it is now and asks again.
// Without a network the change is queued (outbox.ts) with that same If-Match.
import { Fragment } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { api, ApiError, NetworkError } from './api.ts';
import { isoIndex, Progress } from './isos.tsx';
import { onWeldChanges, subscribe, type ChangeEvent } from './live.ts';
import {
  byWeldNumber,
  choicesOf,
  nextSteps,
  query,
  STATUSES,
  tagOf,
  transitionRules,
  when,
  WELD_TYPES,
  type Choice,
  type Component,
  type FillerLot,
  type HardnessReading,
  type HistoryEntry,
  type Inspection,
  type IsoProgress,
  type NdtRecord,
  type Page,
  type PwhtRecord,
  type Status,
  type Transition,
  type Weld,
  type WeldChecks,
  type WeldFiller,
} from './model.ts';
import { changeText, enqueue, isPlace } from './outbox.ts';
import {
  describeError,
  ErrorNotice,
  formText,
  Heading,
  sentence,
  StatusBadge,
  type Shell,
} from './ui.tsx';
import { WeldMap } from './weld-map.tsx';

/** The width below which the weld list is a phone's: dense rows, folded filters (app.css). */
const PHONE = window.matchMedia('(max-width: 40rem)');

const PAGE = '50';
/** An ISO's welds come in one page (nearly always), shown in weld number order. */
const ISO_PAGE = '500';

/** The weld of a weld event, when the event carries one newer than `known`. */
function newerWeld(event: ChangeEvent, known: Weld | undefined): Weld | undefined {
  if (!event.type.startsWith('weld.')) return undefined;
  const weld = event.data as unknown as Weld;
  return !known || weld.version > known.version ? weld : undefined;
}

//------------------------------------------------------------------------------------------------
// The list

/** The orders GET /welds offers (`sort`), as the list's choice names them. */
const SORTS = [
  ['weldNumber', 'weld number'],
  ['status', 'status'],
  ['-weldedOn', 'date welded, newest first'],
  ['weldedOn', 'date welded, oldest first'],
] as const;

export function WeldList({ shell, params }: { shell: Shell; params: URLSearchParams }) {
  const filters = {
    isoId: params.get('isoId') ?? undefined,
    status: params.get('status') ?? undefined,
    type: params.get('type') ?? undefined,
    weldNumber: params.get('weldNumber') ?? undefined,
    welderId: params.get('welderId') ?? undefined,
    wpsId: params.get('wpsId') ?? undefined,
    changedSince: params.get('changedSince') ?? undefined,
    sort: params.get('sort') ?? undefined,
  };
  const key = query(filters);
  // The API's filters; a day "changed since" is that day's start in UTC.
  const { changedSince, ...equal } = filters;
  const apiFilters = { ...equal, updatedSince: changedSince && `${changedSince}T00:00:00Z` };
  const [welders, setWelders] = useState<Choice[]>([]);
  const [procedures, setProcedures] = useState<Choice[]>([]);
  const [welds, setWelds] = useState<Weld[] | undefined>();
  const [cursor, setCursor] = useState<string | null>(null);
  const [loading, setLoading] = useState(false);
  const [error, setError] = useState<unknown>();
  const [changed, setChanged] = useState<Set<string>>(new Set());
  const [isos, setIsos] = useState<Map<string, IsoProgress>>(new Map());
  const iso = filters.isoId ? isos.get(filters.isoId) : undefined;
  const end = useRef<HTMLDivElement>(null);
  const readIsos = (fresh: boolean) =>
    isoIndex(fresh).then(
      (all) => setIsos(new Map(all.map((i) => [i.isoId, i]))),
      () => {},
    );

  // One read at a time: a next page asked for twice (the button and the scroll at once) is read
  // once, and a read that newer filters replaced is dropped when it comes back.
  // `next`: the cursor of the page to read next, set as each page arrives, so a late call with a
  // cursor already read (an observer not yet replaced) reads nothing.
  const reads = useRef({ latest: 0, busy: false, next: null as string | null });
  const load = async (after: string | null) => {
    if (after !== null && (reads.current.busy || after !== reads.current.next)) return;
    const read = ++reads.current.latest;
    reads.current.busy = true;
    setLoading(true);
    try {
      const limit = filters.isoId ? ISO_PAGE : PAGE;
      const { body } = await api<Page<Weld>>(
        `/welds${query({ ...apiFilters, limit, cursor: after ?? undefined })}`,
      );
      if (read !== reads.current.latest) return;
      reads.current.next = body.nextCursor;
      setWelds((before) => {
        const all = after ? [...(before ?? []), ...body.items] : body.items;
        // The API's pages are in a stable order of their own; a whole ISO reads better by number
        // (unless another order was asked for).
        return filters.isoId && !filters.sort && !body.nextCursor ? all.sort(byWeldNumber) : all;
      });
      setCursor(body.nextCursor);
      setError(undefined);
    } catch (e) {
      if (read === reads.current.latest) setError(e);
    } finally {
      if (read === reads.current.latest) {
        reads.current.busy = false;
        setLoading(false);
      }
    }
  };

  useEffect(() => {
    if (shell.revision === 0) setWelds(undefined); // a reread keeps the list shown meanwhile
    void load(null);
    void readIsos(true);
  }, [key, shell.revision]);

  useEffect(() => {
    choicesOf('welders').then(setWelders, () => {});
    choicesOf('wps').then(setProcedures, () => {});
  }, []);

  // Live: the ISO progress is read again (at most once a second) when welds change...
  useEffect(() => onWeldChanges(() => void readIsos(true), 1000), []);

  // ...and a listed weld that changes is redrawn and marked.
  useEffect(
    () =>
      subscribe((event) => {
        setWelds((list) => {
          const at = list?.findIndex((w) => w.id === event.subjectId) ?? -1;
          const weld = at >= 0 ? newerWeld(event, list![at]) : undefined;
          if (!weld) return list;
          // Said when its status changes (not when it is only moved on the drawing, say).
          if (event.actorId !== shell.user.id && weld.status !== list![at]!.status) {
            shell.announce(`Weld ${weld.weldNumber} is now ${weld.status}.`);
          }
          setChanged((marked) => new Set(marked).add(weld.id));
          return list!.map((w, i) => (i === at ? weld : w));
        });
      }),
    [shell.user.id],
  );

  // The next page when the end of the list scrolls into view (the button does it by keyboard).
  useEffect(() => {
    if (!end.current || !cursor) return;
    const observer = new IntersectionObserver((entries) => {
      if (entries.some((e) => e.isIntersecting)) void load(cursor);
    });
    observer.observe(end.current);
    return () => observer.disconnect();
  }, [cursor, loading]);

  // On a phone the filters fold away (their summary says how many are on); wider, they show.
  const { isoId: _, sort: _order, ...chosen } = filters;
  const activeFilters = Object.values(chosen).filter(Boolean).length;

  const apply = (event: Event) => {
    event.preventDefault();
    const form = event.currentTarget as HTMLFormElement;
    const value = (name: string) => formText(form, name);
    location.hash = `#/welds${query({
      isoId: filters.isoId,
      status: value('status'),
      type: value('type'),
      weldNumber: value('weldNumber'),
      welderId: value('welderId'),
      wpsId: value('wpsId'),
      changedSince: value('changedSince'),
      sort: value('sort'),
    })}`;
  };

  return (
    <>
      <Heading>{iso ? `Welds on ${iso.isoNumber}` : 'Welds'}</Heading>
      {iso && (
        <p>
          Line {iso.lineNumber}
          {iso.area && `, area ${iso.area}`}: <Progress iso={iso} />{' '}
          <a class="back" href="#/welds">
            All welds
          </a>
        </p>
      )}
      {filters.isoId && <WeldMap key={filters.isoId} shell={shell} isoId={filters.isoId} />}
      <details class="filter-fold" open={!PHONE.matches}>
        <summary>
          Filters
          {activeFilters > 0 ? ` (${activeFilters} on)` : ''}
        </summary>
        <form class="filters" onSubmit={apply} aria-label="Filter welds">
          <FilterSelect
            label="Status"
            name="status"
            value={filters.status}
            options={STATUSES.map((v) => ({ id: v, label: v }))}
          />
          <FilterSelect
            label="Type"
            name="type"
            value={filters.type}
            options={WELD_TYPES.map((v) => ({ id: v, label: v }))}
          />
          <div class="field">
            <label for="f-number">Weld number (exact)</label>
            <input id="f-number" name="weldNumber" value={filters.weldNumber ?? ''} size={10} />
          </div>
          <FilterSelect label="Welder" name="welderId" value={filters.welderId} options={welders} />
          <FilterSelect label="WPS" name="wpsId" value={filters.wpsId} options={procedures} />
          <div class="field">
            <label for="f-since">Changed since</label>
            <input
              id="f-since"
              name="changedSince"
              type="date"
              value={filters.changedSince ?? ''}
            />
          </div>
          <div class="field">
            <label for="f-sort">Sort by</label>
            <select id="f-sort" name="sort" value={filters.sort ?? ''}>
              <option value="">{filters.isoId ? 'weld number' : 'as stored'}</option>
              {SORTS.map(([value, label]) => (
                <option key={value} value={value}>
                  {label}
                </option>
              ))}
            </select>
          </div>
          <button type="submit">Filter</button>
        </form>
      </details>
      <ErrorNotice error={error} />
      {!welds && !error && <p aria-busy="true">Loading welds…</p>}
      {welds && (
        <>
          <p class="hint" role="status">
            {welds.length} weld{welds.length === 1 ? '' : 's'}
            {cursor ? ' shown, more below' : ''}
          </p>
          <table class="cards dense">
            <caption class="sr-only">Welds</caption>
            <thead>
              <tr>
                <th scope="col">Weld</th>
                {!iso && <th scope="col">ISO</th>}
                <th scope="col">Status</th>
                <th scope="col">Type</th>
                <th scope="col">Size</th>
                <th scope="col">Repair cycle</th>
                <th scope="col">Welded on</th>
              </tr>
            </thead>
            <tbody>
              {welds.map((w) => (
                <tr key={w.id} class={changed.has(w.id) ? 'changed' : undefined} data-weld={w.id}>
                  <td data-label="Weld">
                    <a href={`#/welds/${w.id}`}>{w.weldNumber}</a>
                  </td>
                  {!iso && <td data-label="ISO">{isos.get(w.isoId)?.isoNumber ?? '…'}</td>}
                  <td data-label="Status">
                    <StatusBadge status={w.status} />
                  </td>
                  <td data-label="Type">{w.type}</td>
                  <td data-label="Size">{w.size}″</td>
                  <td data-label="Repair cycle">{w.repairCycle}</td>
                  <td data-label="Welded on">{w.weldedOn ?? '—'}</td>
                </tr>
              ))}
            </tbody>
          </table>
          <div ref={end} class="row-actions">
            {cursor && (
              <button
                type="button"
                class="secondary"
                disabled={loading}
                onClick={() => void load(cursor)}
              >
                {loading ? 'Loading…' : 'Load more welds'}
              </button>
            )}
          </div>
        </>
      )}
    </>
  );
}

/** One filter of the list: a labelled choice, "any" first. */
function FilterSelect(props: { label: string; name: string; value?: string; options: Choice[] }) {
  const id = `f-${props.name}`;
  return (
    <div class="field">
      <label for={id}>{props.label}</label>
      <select id={id} name={props.name} value={props.value ?? ''}>
        <option value="">any</option>
        {props.options.map((o) => (
          <option key={o.id} value={o.id}>
            {o.label}
          </option>
        ))}
      </select>
    </div>
  );
}

//------------------------------------------------------------------------------------------------
// One weld

interface Related {
  history: HistoryEntry[];
  ndt: NdtRecord[];
  inspections: Inspection[];
  checks: WeldChecks | undefined;
  trace: Trace;
}

/** What was done to the weld after it was made (F19): read with the rest of its records. */
interface Trace {
  fillers: Array<WeldFiller & { lot: FillerLot | undefined }>;
  pwht: PwhtRecord[];
  hardness: HardnessReading[];
}

async function readTrace(weldId: string): Promise<Trace> {
  const [fillers, pwht, hardness] = await Promise.all([
    api<Page<WeldFiller>>(`/weld-fillers${query({ weldId, limit: '100' })}`),
    api<Page<PwhtRecord>>(`/pwht-records${query({ weldId, limit: '100' })}`),
    api<Page<HardnessReading>>(`/hardness-readings${query({ weldId, limit: '100' })}`),
  ]);
  const lotIds = [...new Set(fillers.body.items.map((f) => f.fillerLotId))];
  const lots = new Map(
    await Promise.all(
      lotIds.map(async (l) => [l, (await api<FillerLot>(`/filler-lots/${l}`)).body] as const),
    ),
  );
  return {
    fillers: fillers.body.items.map((f) => ({ ...f, lot: lots.get(f.fillerLotId) })),
    pwht: pwht.body.items,
    hardness: hardness.body.items,
  };
}

const EMPTY_TRACE: Trace = { fillers: [], pwht: [], hardness: [] };

export function WeldDetail({ shell, id }: { shell: Shell; id: string }) {
  const [weld, setWeld] = useState<Weld | undefined>();
  const [etag, setEtag] = useState<string | undefined>();
  const [related, setRelated] = useState<Related | undefined>();
  const [rules, setRules] = useState<Transition[]>([]);
  const [error, setError] = useState<unknown>();
  const [iso, setIso] = useState<IsoProgress | undefined>();
  // The components it joins: read when the weld names others (not with every record change).
  const [components, setComponents] = useState<Component[]>([]);
  const componentIds = [weld?.component1Id, weld?.component2Id].filter((c): c is string => !!c);
  useEffect(() => {
    Promise.all(
      componentIds.map((c) => api<Component>(`/components/${c}`).then((r) => r.body)),
    ).then(setComponents, () => setComponents([]));
  }, [componentIds.join()]);

  const readWeld = async () => {
    const answer = await api<Weld>(`/welds/${id}`);
    setWeld(answer.body);
    setEtag(answer.etag ?? tagOf(answer.body));
    return answer.body;
  };

  const readRelated = async () => {
    const [history, ndt, inspections, checks, trace] = await Promise.all([
      api<Page<HistoryEntry>>(`/welds/${id}/history?limit=100`),
      api<Page<NdtRecord>>(`/ndt-records${query({ weldId: id, limit: '100' })}`),
      api<Page<Inspection>>(`/inspections${query({ weldId: id, limit: '100' })}`),
      api<WeldChecks>(`/welds/${id}/checks`).catch(() => undefined),
      readTrace(id).catch(() => EMPTY_TRACE),
    ]);
    setRelated({
      history: history.body.items,
      ndt: ndt.body.items,
      inspections: inspections.body.items,
      checks: checks?.body,
      trace,
    });
  };

  useEffect(() => {
    readWeld()
      .then((w) => isoIndex().then((all) => setIso(all.find((i) => i.isoId === w.isoId))))
      .catch(setError);
    readRelated().catch(() => {});
    transitionRules().then(setRules, () => {});
  }, [id, shell.revision]);

  // Live: a change of this weld by anyone (an NDT result too) is shown at once.
  useEffect(
    () =>
      subscribe((event) => {
        if (event.subjectId === id) {
          setWeld((known) => {
            const weld = newerWeld(event, known);
            if (!weld) return known;
            setEtag(tagOf(weld));
            if (event.actorId !== shell.user.id) {
              shell.announce(
                `Weld ${weld.weldNumber} was changed by a colleague: now ${weld.status}.`,
              );
            }
            return weld;
          });
        }
        // This weld, or an NDT record or inspection that covers it.
        const touches = event.subjectId === id || JSON.stringify(event.data).includes(id);
        if (touches) readRelated().catch(() => {});
      }),
    [id, shell.user.id],
  );

  if (error) return <ErrorNotice error={error} />;
  if (!weld) return <p aria-busy="true">Loading the weld…</p>;

  const fields: Array<[string, string | number | null]> = [
    ['ISO', iso?.isoNumber ?? weld.isoId],
    ['Type', weld.type],
    ['Size (NPS)', weld.size],
    ['Schedule', weld.schedule],
    ['Wall thickness (in)', weld.wallThickness],
    ['Material', weld.material],
    [
      'Base metals',
      weld.baseMetal1PNumber || weld.baseMetal2PNumber
        ? `P-No. ${weld.baseMetal1PNumber ?? '?'} to P-No. ${weld.baseMetal2PNumber ?? '?'}`
        : null,
    ],
    ['Preheat (°F)', weld.preheatF],
    ['On the drawing', weld.mapPage ? `page ${weld.mapPage}` : null],
    ['Welded on', weld.weldedOn],
    ['Repair cycle', weld.repairCycle],
    ['Version', weld.version],
    ['Last changed', when(weld.updatedAt)],
  ];

  return (
    <>
      <Heading>
        Weld {weld.weldNumber} <StatusBadge status={weld.status} />
      </Heading>
      <p>
        <a class="back" href={`#/welds${query({ isoId: weld.isoId })}`}>
          All welds on {iso?.isoNumber ?? 'this ISO'}
        </a>
      </p>
      <div class="detail">
        <section aria-labelledby="fields-heading">
          <h2 id="fields-heading">Fields</h2>
          <dl class="fields">
            {fields.map(([name, value]) => (
              <Fragment key={name}>
                <dt>{name}</dt>
                <dd>{value ?? '—'}</dd>
              </Fragment>
            ))}
          </dl>
          <StatusChange
            shell={shell}
            weld={weld}
            etag={etag ?? tagOf(weld)}
            rules={rules}
            checks={related?.checks}
            bases={acceptanceBases(weld, related)}
            changed={(w, tag) => {
              setWeld(w);
              setEtag(tag);
              readRelated().catch(() => {});
            }}
            reread={readWeld}
          />
          <div class="row-actions">
            <a href={`#/welds/${id}/ndt`}>Record an NDT result</a>
            <a href={`#/welds/${id}/inspection`}>Record an inspection</a>
          </div>
        </section>
        <section aria-labelledby="related-heading">
          <h2 id="related-heading" class="sr-only">
            History and records
          </h2>
          <RelatedRecords
            related={related}
            components={components}
            weldId={id}
            userId={shell.user.id}
          />
        </section>
      </div>
    </>
  );
}

/** What an acceptance may rest on: a record of this weld that accepted it (the newest first). */
interface Basis {
  key: string;
  label: string;
  body: { ndtRecordId: string } | { inspectionId: string };
}

/**
 * The weld's NDT records and visual or final inspections that accepted it since it was last
 * welded (the service judges the dates again): what an inspector's acceptance names as its basis.
 */
function acceptanceBases(weld: Weld, related: Related | undefined): Basis[] {
  if (!related) return [];
  const ndt = related.ndt
    .filter((r) => r.welds.some((w) => w.weldId === weld.id && w.result === 'accepted'))
    .map((r) => ({
      on: r.examinedOn,
      key: `ndt:${r.id}`,
      label: `${r.method} report ${r.reportNumber} of ${r.examinedOn}`,
      body: { ndtRecordId: r.id },
    }));
  const inspections = related.inspections
    .filter((i) => (i.kind === 'visual' || i.kind === 'final') && i.result === 'accepted')
    .map((i) => ({
      on: i.inspectedOn,
      key: `inspection:${i.id}`,
      label: `${i.kind} inspection of ${i.inspectedOn} (${i.inspectorName})`,
      body: { inspectionId: i.id },
    }));
  return [...ndt, ...inspections]
    .sort((a, b) => b.on.localeCompare(a.on))
    .map(({ key, label, body }) => ({ key, label, body }));
}

/** Today as the device's calendar says it: the day a repair is most often welded. */
const today = () => {
  const now = new Date();
  return new Date(now.getTime() - now.getTimezoneOffset() * 60_000).toISOString().slice(0, 10);
};

function StatusChange(props: {
  shell: Shell;
  weld: Weld;
  etag: string;
  rules: Transition[];
  /** The code rules' verdict on the weld: accepting a weld that fails them earns a warning. */
  checks: WeldChecks | undefined;
  /** What an acceptance may rest on. */
  bases: Basis[];
  changed: (weld: Weld, etag: string) => void;
  reread: () => Promise<Weld>;
}) {
  const { shell, weld, etag } = props;
  const [target, setTarget] = useState<Status | ''>('');
  const [reason, setReason] = useState('');
  // The acceptance's basis: a basis's key, or 'disposition' (engineers) with its text.
  const [basis, setBasis] = useState('');
  const [disposition, setDisposition] = useState('');
  // A re-weld's own welding (REPAIR -> PENDING).
  const [repairOn, setRepairOn] = useState(today());
  const [repairWelder, setRepairWelder] = useState(weld.welderId ?? '');
  const [welders, setWelders] = useState<Array<{ id: string; stamp: string }>>([]);
  const [busy, setBusy] = useState(false);
  const [notice, setNotice] = useState<{ text: string; problem: boolean } | undefined>();
  const steps = nextSteps(props.rules, weld.status, shell.user.role);
  const step = steps.find((s) => s.toStatus === target);
  const engineer = shell.user.role === 'engineer' || shell.user.role === 'admin';
  const reweld = weld.status === 'REPAIR' && target === 'PENDING';
  const chosen = props.bases.find((b) => b.key === basis) ?? props.bases[0];

  useEffect(() => {
    if (!reweld || welders.length) return;
    api<Page<{ id: string; stamp: string }>>(`/welders${query({ limit: '500' })}`).then(
      (answer) => setWelders(answer.body.items),
      () => {},
    );
  }, [reweld]);

  /** What the change says beyond its status: the basis of an acceptance, a re-weld's welding. */
  const details = () => {
    if (target === 'ACCEPTED') {
      if (basis === 'disposition') return { disposition: disposition.trim() };
      return chosen ? chosen.body : {};
    }
    if (reweld) return { repair: { weldedOn: repairOn, welderId: repairWelder || null } };
    return {};
  };

  const waiting = shell.queued.find((c) => c.weldId === weld.id);

  // The weld moved (live, or reread: a queued change sent, say): what was chosen may no longer
  // be offered, and what was said of the old version is past.
  useEffect(() => {
    if (target && !steps.some((s) => s.toStatus === target)) setTarget('');
    setNotice((said) => (said?.problem ? said : undefined));
  }, [weld.version]);

  const queue = async () => {
    await enqueue({
      userId: shell.user.id,
      weldId: weld.id,
      weldNumber: weld.weldNumber,
      fromStatus: weld.status,
      status: target as Status,
      ...(reason.trim() && { reason: reason.trim() }),
      ...details(),
      ifMatch: etag,
      queuedAt: new Date().toISOString(),
    });
    shell.queuedChange();
    setTarget('');
    setReason('');
    shell.announce(`Saved offline: ${weld.weldNumber} to ${target}.`);
  };

  const submit = async (event: Event) => {
    event.preventDefault();
    if (!target) return;
    setBusy(true);
    setNotice(undefined);
    try {
      if (!navigator.onLine) return await queue();
      const answer = await api<Weld>(`/welds/${weld.id}/status`, {
        method: 'PATCH',
        body: { status: target, ...(reason.trim() && { reason: reason.trim() }), ...details() },
        ifMatch: etag,
      });
      props.changed(answer.body, answer.etag ?? tagOf(answer.body));
      shell.announce(`Weld ${answer.body.weldNumber} is now ${answer.body.status}.`);
      setTarget('');
      setReason('');
    } catch (e) {
      if (e instanceof NetworkError) return await queue();
      if (e instanceof ApiError && (e.status === 412 || e.status === 409)) {
        // Someone changed it meanwhile, or the rules say no: show the weld as it is now.
        const now = await props.reread().catch(() => undefined);
        const allowed = e.problem.allowed;
        setNotice({
          problem: true,
          text:
            e.status === 412
              ? `This weld was changed while you were deciding: it is now ` +
                `${now?.status ?? 'different'} (version ${now?.version ?? '?'}). ` +
                `Your change to ${target} was not applied. Choose again.`
              : sentence(e.message) +
                (allowed ? ` Allowed from here: ${allowed.join(', ') || 'nothing'}.` : ''),
        });
        setTarget('');
      } else {
        setNotice({ text: describeError(e), problem: true });
      }
    } finally {
      setBusy(false);
    }
  };

  const said = notice && (
    <p
      class={notice.problem ? 'notice problem' : 'notice'}
      role={notice.problem ? 'alert' : 'status'}
    >
      {notice.text}
    </p>
  );
  // One change at a time: a second one, made on the same version, could only fail.
  if (waiting) {
    return (
      <div class="panel">
        {said}
        <p class="notice" role="status">
          Offline:{' '}
          {isPlace(waiting)
            ? changeText(waiting)
            : `${weld.weldNumber} ${waiting.fromStatus} → ${waiting.status}`}{' '}
          is kept and will be sent when the network returns; change it again after that.
        </p>
      </div>
    );
  }
  if (props.rules.length && steps.length === 0) {
    return (
      <div class="panel">
        {said}
        <p class="hint">
          {shell.user.role === 'viewer'
            ? 'Your role (viewer) may read welds, not change their status.'
            : `No status change from ${weld.status} is open to your role (${shell.user.role}).`}
        </p>
      </div>
    );
  }

  return (
    <form class="panel" onSubmit={submit} aria-labelledby="change-heading">
      <h2 id="change-heading">Change the status</h2>
      <fieldset class="choices">
        <legend>From {weld.status} to</legend>
        {steps.map((s) => (
          <label key={s.toStatus}>
            <input
              type="radio"
              name="status"
              value={s.toStatus}
              checked={target === s.toStatus}
              onChange={() => setTarget(s.toStatus)}
            />
            {s.toStatus}
            {s.reasonRequired && <span class="hint"> (reason required)</span>}
          </label>
        ))}
      </fieldset>
      {step?.note && <p class="hint">{step.note}</p>}
      {target === 'ACCEPTED' && props.checks && !props.checks.ok && (
        <p class="notice" role="note">
          This weld fails {props.checks.checks.length} code check
          {props.checks.checks.length === 1 ? '' : 's'} (
          {[...new Set(props.checks.checks.map((c) => c.code))].join(', ')}; see Checks). The rules
          let you accept it; make sure that is what you mean.
        </p>
      )}
      {target === 'ACCEPTED' && (
        <fieldset class="choices">
          <legend>Accepted on</legend>
          {props.bases.map((b) => (
            <label key={b.key}>
              <input
                type="radio"
                name="basis"
                value={b.key}
                checked={chosen?.key === b.key && basis !== 'disposition'}
                onChange={() => setBasis(b.key)}
              />
              {b.label}
            </label>
          ))}
          {engineer && (
            <label>
              <input
                type="radio"
                name="basis"
                value="disposition"
                checked={basis === 'disposition' || (!chosen && basis === '')}
                onChange={() => setBasis('disposition')}
              />
              a documented disposition (engineers)
            </label>
          )}
          {!props.bases.length && !engineer && (
            <p class="hint">
              No NDT record or visual inspection of this weld accepted it yet: record one first,
              then accept on it.
            </p>
          )}
        </fieldset>
      )}
      {target === 'ACCEPTED' && engineer && (basis === 'disposition' || !chosen) && (
        <div class="field">
          <label for="disposition">Disposition (its reference and decision)</label>
          <textarea
            id="disposition"
            rows={2}
            maxLength={2000}
            required
            value={disposition}
            onInput={(e) => setDisposition(e.currentTarget.value)}
          />
        </div>
      )}
      {reweld && (
        <fieldset class="choices">
          <legend>The repair as welded</legend>
          <div class="field">
            <label for="repair-on">Welded on</label>
            <input
              id="repair-on"
              type="date"
              required
              value={repairOn}
              onInput={(e) => setRepairOn(e.currentTarget.value)}
            />
          </div>
          <div class="field">
            <label for="repair-welder">Welder</label>
            <select
              id="repair-welder"
              value={repairWelder}
              onChange={(e) => setRepairWelder(e.currentTarget.value)}
            >
              <option value="">not recorded</option>
              {welders.map((w) => (
                <option key={w.id} value={w.id}>
                  {w.stamp}
                </option>
              ))}
            </select>
          </div>
        </fieldset>
      )}
      <div class="field">
        <label for="reason">
          Reason{step ? (step.reasonRequired ? ' (required)' : ' (optional)') : ''}
        </label>
        <textarea
          id="reason"
          rows={2}
          maxLength={2000}
          value={reason}
          required={step?.reasonRequired ?? false}
          onInput={(e) => setReason(e.currentTarget.value)}
        />
      </div>
      {said}
      <button
        type="submit"
        disabled={
          !target ||
          busy ||
          (target === 'ACCEPTED' &&
            (basis === 'disposition' || !chosen ? !engineer || !disposition.trim() : false))
        }
      >
        {busy ? 'Saving…' : shell.online ? 'Change status' : 'Change status (offline)'}
      </button>
    </form>
  );
}

function RelatedRecords({
  related,
  components,
  weldId,
  userId,
}: {
  related: Related | undefined;
  components: Component[];
  weldId: string;
  userId: string;
}) {
  if (!related) return <p aria-busy="true">Loading history and records…</p>;
  const { history, ndt, inspections, checks, trace } = related;
  return (
    <>
      <TraceRecords trace={trace} components={components} />
      <h3>Status history</h3>
      {history.length === 0 ? (
        <p class="hint">No status change yet.</p>
      ) : (
        <ol class="history">
          {history.map((h) => (
            <li key={h.id}>
              {h.fromStatus} → <StatusBadge status={h.toStatus} /> {when(h.changedAt)}
              {h.cause === 'ndt'
                ? ' by an NDT result'
                : h.cause === 'system'
                  ? ' (system)'
                  : h.changedBy === userId
                    ? ' by you'
                    : ` by ${h.changedByName ?? 'a colleague'}`}
              {h.reason && <span class="hint">: {h.reason}</span>}
            </li>
          ))}
        </ol>
      )}
      <h3>NDT records</h3>
      {ndt.length === 0 ? (
        <p class="hint">None.</p>
      ) : (
        <ul>
          {ndt.map((r) => (
            <li key={r.id}>
              {r.method} {r.reportNumber}, {r.examinedOn}:{' '}
              {r.welds.find((x) => x.weldId === weldId)?.result ?? r.result}
              {r.technician && ` (${r.technician})`}
              <FilmOfWeld record={r} weldId={weldId} />
            </li>
          ))}
        </ul>
      )}
      <h3>Inspections</h3>
      {inspections.length === 0 ? (
        <p class="hint">None.</p>
      ) : (
        <ul>
          {inspections.map((i) => (
            <li key={i.id}>
              {i.kind}, {i.inspectedOn}: {i.result} ({i.inspectorName})
              {i.notes && <span class="hint">: {i.notes}</span>}
            </li>
          ))}
        </ul>
      )}
      <h3>Checks</h3>
      {!checks ? (
        <p class="hint">Not available.</p>
      ) : checks.ok ? (
        <p>All code checks pass.</p>
      ) : (
        <ul>
          {checks.checks.map((c, i) => (
            <li key={i}>
              <strong>{c.code}</strong>: {c.detail}
            </li>
          ))}
        </ul>
      )}
    </>
  );
}

/** Its materials and heat numbers, fillers, PWHT and hardness (issue F19). */
function TraceRecords({ trace, components }: { trace: Trace; components: Component[] }) {
  const { fillers, pwht, hardness } = trace;
  const where = { weld: 'weld metal', haz: 'heat affected zone', base: 'base metal' } as const;
  return (
    <>
      <h3>Materials</h3>
      {components.length === 0 ? (
        <p class="hint">No component recorded.</p>
      ) : (
        <ul>
          {components.map((c) => (
            <li key={c.id}>
              {c.tag}: {c.kind} {c.materialSpec}
              {c.grade && `-${c.grade}`}
              {c.pNumber && `, P-No. ${c.pNumber}`}, heat {c.heatNumber ?? '—'}
              {c.mtrRef && <span class="hint"> (MTR {c.mtrRef})</span>}
            </li>
          ))}
        </ul>
      )}
      <h3>Filler metal</h3>
      {fillers.length === 0 ? (
        <p class="hint">None recorded.</p>
      ) : (
        <ul>
          {fillers.map((f) => (
            <li key={f.id}>
              {f.process}:{' '}
              {f.lot
                ? `${f.lot.awsClassification} lot ${f.lot.lotNumber}, F-No. ${f.lot.fNumber}`
                : f.fillerLotId}
            </li>
          ))}
        </ul>
      )}
      <h3>PWHT</h3>
      {pwht.length === 0 ? (
        <p class="hint">None recorded.</p>
      ) : (
        <ul>
          {pwht.map((p) => (
            <li key={p.id}>
              {p.recordNumber}, {p.treatedOn}: {p.holdingTemperatureF} °F for {p.holdMinutes} min
              {p.chartRef && <span class="hint"> (chart {p.chartRef})</span>}
            </li>
          ))}
        </ul>
      )}
      <h3>Hardness</h3>
      {hardness.length === 0 ? (
        <p class="hint">None recorded.</p>
      ) : (
        <ul>
          {hardness.map((h) => (
            <li key={h.id}>
              {h.hardnessHb} HB, {where[h.location]}, {h.measuredOn}
            </li>
          ))}
        </ul>
      )}
    </>
  );
}

/** The film intervals of an RT record that show this weld: label, result and defect codes. */
function FilmOfWeld({ record, weldId }: { record: NdtRecord; weldId: string }) {
  const shown = (record.filmIntervals ?? []).filter((f) => f.weldIds.includes(weldId));
  if (shown.length === 0) return null;
  return (
    <span class="hint">
      {' '}
      film{' '}
      {shown
        .map(
          (f) =>
            `${f.label} ${f.result}` +
            (f.defectCodes.length > 0 ? ` (defects ${f.defectCodes.join(', ')})` : ''),
        )
        .join('; ')}
    </span>
  );
}
