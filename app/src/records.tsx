// Recording what was examined: an NDT result (POST /ndt-records; for RT its film intervals, each
// mapped to the welds it shows) and an inspection (POST /inspections), both opened from a weld and
// covering any welds of its ISO. The service applies an NDT record's results to the welds in the
// same transaction (a rejected film moves a weld to REJECTED), or refuses the whole record (409,
// naming each weld the rules refuse): the form shows which and why.
import { useEffect, useState } from 'preact/hooks';
import { api, ApiError } from './api.ts';
import {
  INSPECTION_KINDS,
  NDT_METHODS,
  query,
  today,
  type Inspection,
  type NdtRecord,
  type Page,
  type Result,
  type Weld,
} from './model.ts';
import {
  describeError,
  ErrorNotice,
  formText,
  Heading,
  sentence,
  StatusBadge,
  type ItemNamer,
  type Shell,
} from './ui.tsx';

/** The weld the form was opened from, and every weld of its ISO to choose among. */
function useIsoWelds(weldId: string) {
  const [weld, setWeld] = useState<Weld | undefined>();
  const [welds, setWelds] = useState<Weld[]>([]);
  const [error, setError] = useState<unknown>();
  useEffect(() => {
    (async () => {
      const { body } = await api<Weld>(`/welds/${weldId}`);
      setWeld(body);
      const all: Weld[] = [];
      let cursor: string | undefined;
      do {
        const page = await api<Page<Weld>>(
          `/welds${query({ isoId: body.isoId, limit: '500', cursor })}`,
        );
        all.push(...page.body.items);
        cursor = page.body.nextCursor ?? undefined;
      } while (cursor);
      setWelds(
        all.sort((a, b) => a.weldNumber.localeCompare(b.weldNumber, undefined, { numeric: true })),
      );
    })().catch(setError);
  }, [weldId]);
  return { weld, welds, error };
}

/** What was sent, as far as naming its errors needs. */
interface SentRecord {
  welds: { weldId: string }[];
  filmIntervals?: { label: string; weldIds: string[] }[];
}

/** The problem of a refused record in words, naming each weld the rules refused. */
function refusal(error: unknown, welds: Weld[], sent: SentRecord): string {
  const number = (id: string) => welds.find((w) => w.id === id)?.weldNumber ?? id;
  // "/welds/0/result" is "weld W001, result"; "/filmIntervals/1/weldIds/0" "film interval 1-2, weld W002".
  const name: ItemNamer = (key, index, parents) => {
    if (key === 'welds' && parents.length === 0) {
      const id = sent.welds[index]?.weldId;
      return id === undefined ? undefined : `weld ${number(id)}`;
    }
    if (key === 'filmIntervals' && parents.length === 0) {
      const label = sent.filmIntervals?.[index]?.label;
      return label === undefined ? undefined : `film interval ${label || '(no label)'}`;
    }
    if (key === 'weldIds' && parents.length === 2 && parents[0] === 'filmIntervals') {
      const interval = sent.filmIntervals?.[Number(parents[1])];
      const id = interval?.weldIds[index];
      return id === undefined ? undefined : `weld ${number(id)}`;
    }
    return undefined;
  };
  if (!(error instanceof ApiError) || !error.problem.welds) return describeError(error, name);
  return (
    `${sentence(error.message)} ` +
    error.problem.welds
      .map((w) => `${w.weldNumber ?? number(w.weldId)} is ${w.status} and cannot be ${w.result}`)
      .join('; ') +
    '.'
  );
}

/** The top of both forms: the heading and the weld they were opened from (or why not). */
function FormHead({ title, weld, error }: { title: string; weld?: Weld; error?: unknown }) {
  if (error) return <ErrorNotice error={error} />;
  if (!weld) return <p aria-busy="true">Loading…</p>;
  return (
    <>
      <Heading>{title}</Heading>
      <p>
        From weld <a href={`#/welds/${weld.id}`}>{weld.weldNumber}</a>{' '}
        <StatusBadge status={weld.status} />
      </p>
    </>
  );
}

/** The end of both forms: notes, what went wrong, and the buttons. */
function FormEnd(props: {
  notesId: string;
  error: string;
  busy: boolean;
  ready: boolean;
  submit: string;
  back: string;
}) {
  return (
    <>
      <div class="field">
        <label for={props.notesId}>Notes</label>
        <textarea id={props.notesId} name="notes" rows={2} maxLength={2000} />
      </div>
      {props.error && (
        <p class="notice problem" role="alert">
          {props.error}
        </p>
      )}
      <div class="row-actions">
        <button type="submit" disabled={props.busy || !props.ready}>
          {props.busy ? 'Recording…' : props.submit}
        </button>
        <a href={`#/welds/${props.back}`}>Cancel</a>
      </div>
    </>
  );
}

interface Interval {
  label: string;
  result: Result;
  defectCodes: string;
  weldIds: string[];
}

export function NdtForm({ shell, weldId }: { shell: Shell; weldId: string }) {
  const { weld, welds, error: loadError } = useIsoWelds(weldId);
  const [method, setMethod] = useState<string>('RT');
  const [chosen, setChosen] = useState<Record<string, Result | ''>>({ [weldId]: '' });
  const [intervals, setIntervals] = useState<Interval[]>([
    { label: '0-1', result: 'accepted', defectCodes: '', weldIds: [weldId] },
  ]);
  const [error, setError] = useState('');
  const [busy, setBusy] = useState(false);
  const rt = method === 'RT';
  const covered = welds.filter((w) => w.id in chosen);

  const toggleWeld = (id: string, on: boolean) => {
    const next = { ...chosen };
    if (on) next[id] = '';
    else delete next[id];
    setChosen(next);
    if (!on)
      setIntervals(intervals.map((i) => ({ ...i, weldIds: i.weldIds.filter((w) => w !== id) })));
  };
  const setInterval_ = (at: number, change: Partial<Interval>) =>
    setIntervals(intervals.map((i, n) => (n === at ? { ...i, ...change } : i)));

  const submit = async (event: Event) => {
    event.preventDefault();
    const form = event.currentTarget as HTMLFormElement;
    const text = (name: string) => formText(form, name);
    const body = {
      method,
      reportNumber: text('reportNumber'),
      examinedOn: text('examinedOn'),
      technician: text('technician'),
      notes: text('notes'),
      welds: Object.entries(chosen).map(([id, result]) => ({
        weldId: id,
        ...(result ? { result } : {}),
      })),
      ...(rt && {
        filmIntervals: intervals.map((i) => ({
          label: i.label.trim(),
          result: i.result,
          defectCodes: i.defectCodes.split(/[\s,]+/).filter(Boolean),
          weldIds: i.weldIds,
        })),
      }),
    };
    const bare = rt ? intervals.find((i) => i.weldIds.length === 0) : undefined;
    if (bare) {
      setError(`Film interval ${bare.label || '(no label)'}: tick the welds it shows.`);
      return;
    }
    setBusy(true);
    setError('');
    try {
      const { body: record } = await api<NdtRecord>('/ndt-records', { method: 'POST', body });
      shell.announce(
        `${record.method} report ${record.reportNumber} recorded: ` +
          record.welds
            .map(
              (x) => `${welds.find((w) => w.id === x.weldId)?.weldNumber ?? x.weldId} ${x.result}`,
            )
            .join(', ') +
          '.',
        `#/welds/${weldId}`,
      );
      location.hash = `#/welds/${weldId}`;
    } catch (e) {
      setError(refusal(e, welds, body));
    } finally {
      setBusy(false);
    }
  };

  if (loadError || !weld)
    return <FormHead title="Record an NDT result" weld={weld} error={loadError} />;
  return (
    <>
      <FormHead title="Record an NDT result" weld={weld} />
      <form onSubmit={submit}>
        <div class="filters">
          <div class="field">
            <label for="method">Method</label>
            <select id="method" value={method} onChange={(e) => setMethod(e.currentTarget.value)}>
              {NDT_METHODS.map((m) => (
                <option key={m}>{m}</option>
              ))}
            </select>
          </div>
          <div class="field">
            <label for="reportNumber">Report number</label>
            <input id="reportNumber" name="reportNumber" required maxLength={100} />
          </div>
          <div class="field">
            <label for="examinedOn">Examined on</label>
            <input id="examinedOn" name="examinedOn" type="date" required value={today()} />
          </div>
          <div class="field">
            <label for="technician">Technician</label>
            <input id="technician" name="technician" maxLength={200} />
          </div>
        </div>
        <fieldset class="choices">
          <legend>
            Welds examined (results: {rt ? 'from the film unless given' : 'required'})
          </legend>
          {welds.map((w) => (
            <label key={w.id}>
              <input
                type="checkbox"
                checked={w.id in chosen}
                onChange={(e) => toggleWeld(w.id, e.currentTarget.checked)}
              />
              {w.weldNumber}
            </label>
          ))}
        </fieldset>
        {covered.map((w) => (
          <div class="field" key={w.id}>
            <label for={`result-${w.id}`}>Result for {w.weldNumber}</label>
            <select
              id={`result-${w.id}`}
              value={chosen[w.id]}
              required={!rt}
              onChange={(e) =>
                setChosen({ ...chosen, [w.id]: e.currentTarget.value as Result | '' })
              }
            >
              <option value="">{rt ? 'from the film' : 'choose'}</option>
              <option value="accepted">accepted</option>
              <option value="rejected">rejected</option>
            </select>
          </div>
        ))}
        {rt && (
          <section aria-labelledby="film-heading">
            <h2 id="film-heading">Film intervals</h2>
            {intervals.map((interval, at) => (
              <div class="interval" key={at}>
                <div class="filters">
                  <div class="field">
                    <label for={`label-${at}`}>
                      <span class="sr-only">Film interval {at + 1}: </span>Interval
                    </label>
                    <input
                      id={`label-${at}`}
                      value={interval.label}
                      required
                      size={6}
                      onInput={(e) => setInterval_(at, { label: e.currentTarget.value })}
                    />
                  </div>
                  <div class="field">
                    <label for={`film-result-${at}`}>
                      <span class="sr-only">Film interval {at + 1}: </span>Result
                    </label>
                    <select
                      id={`film-result-${at}`}
                      value={interval.result}
                      onChange={(e) =>
                        setInterval_(at, { result: e.currentTarget.value as Result })
                      }
                    >
                      <option value="accepted">accepted</option>
                      <option value="rejected">rejected</option>
                    </select>
                  </div>
                  <div class="field">
                    <label for={`defects-${at}`}>
                      <span class="sr-only">Film interval {at + 1}: </span>Defect codes
                    </label>
                    <input
                      id={`defects-${at}`}
                      value={interval.defectCodes}
                      required={interval.result === 'rejected'}
                      placeholder="PO, SI"
                      size={10}
                      onInput={(e) => setInterval_(at, { defectCodes: e.currentTarget.value })}
                    />
                  </div>
                </div>
                <fieldset class="choices">
                  <legend>Welds on interval {interval.label || at + 1}</legend>
                  {covered.map((w) => (
                    <label key={w.id}>
                      <input
                        type="checkbox"
                        checked={interval.weldIds.includes(w.id)}
                        onChange={(e) =>
                          setInterval_(at, {
                            weldIds: e.currentTarget.checked
                              ? [...interval.weldIds, w.id]
                              : interval.weldIds.filter((id) => id !== w.id),
                          })
                        }
                      />
                      {w.weldNumber}
                    </label>
                  ))}
                </fieldset>
                <button
                  type="button"
                  class="secondary"
                  onClick={() => setIntervals(intervals.filter((_, n) => n !== at))}
                >
                  Remove interval {interval.label}
                </button>
              </div>
            ))}
            <button
              type="button"
              class="secondary"
              onClick={() =>
                setIntervals([
                  ...intervals,
                  {
                    label: `${intervals.length}-${intervals.length + 1}`,
                    result: 'accepted',
                    defectCodes: '',
                    weldIds: [],
                  },
                ])
              }
            >
              Add a film interval
            </button>
          </section>
        )}
        <FormEnd
          notesId="notes"
          error={error}
          busy={busy}
          ready={covered.length > 0}
          submit="Record the result"
          back={weldId}
        />
      </form>
    </>
  );
}

export function InspectionForm({ shell, weldId }: { shell: Shell; weldId: string }) {
  const { weld, welds, error: loadError } = useIsoWelds(weldId);
  const [chosen, setChosen] = useState<string[]>([weldId]);
  const [error, setError] = useState('');
  const [busy, setBusy] = useState(false);

  const submit = async (event: Event) => {
    event.preventDefault();
    const form = event.currentTarget as HTMLFormElement;
    const text = (name: string) => formText(form, name);
    setBusy(true);
    setError('');
    try {
      const { body } = await api<Inspection>('/inspections', {
        method: 'POST',
        body: {
          kind: text('kind'),
          inspectedOn: text('inspectedOn'),
          result: text('result'),
          notes: text('notes'),
          weldIds: chosen,
        },
      });
      shell.announce(`${body.kind} inspection recorded: ${body.result}.`, `#/welds/${weldId}`);
      location.hash = `#/welds/${weldId}`;
    } catch (e) {
      setError(describeError(e));
    } finally {
      setBusy(false);
    }
  };

  if (loadError || !weld)
    return <FormHead title="Record an inspection" weld={weld} error={loadError} />;
  return (
    <>
      <FormHead title="Record an inspection" weld={weld} />
      <form onSubmit={submit}>
        <div class="filters">
          <div class="field">
            <label for="kind">Kind</label>
            <select id="kind" name="kind">
              {INSPECTION_KINDS.map((k) => (
                <option key={k}>{k}</option>
              ))}
            </select>
          </div>
          <div class="field">
            <label for="inspectedOn">Inspected on</label>
            <input id="inspectedOn" name="inspectedOn" type="date" required value={today()} />
          </div>
          <div class="field">
            <label for="result">Result</label>
            <select id="result" name="result">
              <option value="accepted">accepted</option>
              <option value="rejected">rejected</option>
            </select>
          </div>
        </div>
        <fieldset class="choices">
          <legend>Welds inspected</legend>
          {welds.map((w) => (
            <label key={w.id}>
              <input
                type="checkbox"
                checked={chosen.includes(w.id)}
                onChange={(e) =>
                  setChosen(
                    e.currentTarget.checked
                      ? [...chosen, w.id]
                      : chosen.filter((id) => id !== w.id),
                  )
                }
              />
              {w.weldNumber}
            </label>
          ))}
        </fieldset>
        <FormEnd
          notesId="inspection-notes"
          error={error}
          busy={busy}
          ready={chosen.length > 0}
          submit="Record the inspection"
          back={weldId}
        />
      </form>
    </>
  );
}
