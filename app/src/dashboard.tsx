// The QC manager's dashboard (#/dashboard, engineers and admins): progress over time, the repair
// rate per welder against the tenant's threshold, the examination backlog and the test packages,
// each a chart with the table of its numbers beneath it (what a screen reader reads, and what a
// chart cannot say exactly). The numbers are the reports' (GET /reports/<name>, docs/reports.md;
// the progress summed per area and week by GraphQL's groupedAggregates over the same report, as a
// large project has 100,000 ISO-weeks), so the dashboard, REST, GraphQL and SQL agree; they are
// read again while changes arrive on the live stream.
import {
  BarController,
  BarElement,
  CategoryScale,
  Chart,
  Legend,
  LinearScale,
  LineController,
  LineElement,
  PointElement,
  type ChartConfiguration,
} from 'chart.js';
import type { ComponentChildren } from 'preact';
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { api, type User } from './api.ts';
import { subscribe } from './live.ts';
import { query, type Page } from './model.ts';
import { ErrorNotice, Heading, type Shell } from './ui.tsx';

Chart.register(
  BarController,
  BarElement,
  CategoryScale,
  Legend,
  LinearScale,
  LineController,
  LineElement,
  PointElement,
);

/** Who sees the dashboard in the app (the reports themselves are every reader's). */
export const mayUseDashboard = (user: User) => user.role === 'engineer' || user.role === 'admin';

interface WeekRow {
  area: string | null;
  week: string;
  welded: number;
  accepted: number;
}
interface WelderRow {
  welderStamp: string;
  welderName: string;
  month: string;
  weldsExamined: number;
  weldsRejected: number;
  thresholdPercent: number;
}
interface BacklogRow {
  method: string;
  days0To7: number;
  days8To30: number;
  days31To90: number;
  daysOver90: number;
  open: number;
}
interface PackageRow {
  state: string;
  ready: boolean;
}
interface Reports {
  weeks: WeekRow[];
  welders: WelderRow[];
  backlog: BacklogRow[];
  packages: PackageRow[];
}

const MAX_PAGES = 40;

/** Every row of a report, page by page; more than MAX_PAGES pages of 500 is an error, not a cut. */
async function rows<T>(name: string): Promise<T[]> {
  const all: T[] = [];
  let cursor: string | undefined;
  for (let page = 0; page < MAX_PAGES; page++) {
    const { body } = await api<Page<T>>(`/reports/${name}${query({ limit: '500', cursor })}`);
    all.push(...body.items);
    cursor = body.nextCursor ?? undefined;
    if (!cursor) return all;
  }
  throw new Error(`The ${name} report has more than ${MAX_PAGES * 500} rows to chart.`);
}

interface WeekGroups {
  data?: {
    allWeldReportsWeldProgresses: {
      groupedAggregates: Array<{
        keys: [string | null, string];
        sum: { welded: string | number; accepted: string | number };
      }>;
    };
  };
  errors?: Array<{ message: string }>;
}

/** Welds made and accepted per area and week, summed by the service. */
async function weekTotals(): Promise<WeekRow[]> {
  const { body } = await api<WeekGroups>('/graphql', {
    method: 'POST',
    body: {
      query:
        '{ allWeldReportsWeldProgresses { groupedAggregates(groupBy: [AREA, WEEK]) { keys sum { welded accepted } } } }',
    },
  });
  if (!body.data) throw new Error(body.errors?.[0]?.message ?? 'GraphQL answered no data.');
  return body.data.allWeldReportsWeldProgresses.groupedAggregates.map((g) => ({
    area: g.keys[0],
    week: g.keys[1],
    welded: Number(g.sum.welded),
    accepted: Number(g.sum.accepted),
  }));
}

// The reports one after the other: a user may have 2 report requests in progress at once
// (429 /problems/too-many-reports past that, docs/reports.md), and each answers in milliseconds.
const readReports = async (): Promise<Reports> => {
  const weeks = await weekTotals();
  const welders = await rows<WelderRow>('welder-performance');
  const backlog = await rows<BacklogRow>('examination-backlog');
  const packages = await rows<PackageRow>('test-package-board');
  return { weeks, welders, backlog, packages };
};

export function Dashboard({ shell }: { shell: Shell }) {
  const [reports, setReports] = useState<Reports | undefined>();
  const [error, setError] = useState<unknown>();
  const [area, setArea] = useState('');
  const [month, setMonth] = useState('');

  // One read at a time: changes arriving during a read ask for one more after it, no more.
  const reading = useRef({ busy: false, again: false });
  useEffect(() => {
    if (!mayUseDashboard(shell.user)) return;
    let gone = false;
    const read = () => {
      if (reading.current.busy) {
        reading.current.again = true;
        return;
      }
      reading.current.busy = true;
      readReports()
        .then(
          (read) => {
            if (gone) return;
            setReports(read);
            setError(undefined);
          },
          (e: unknown) => !gone && setError(e),
        )
        .finally(() => {
          reading.current.busy = false;
          if (reading.current.again && !gone) {
            reading.current.again = false;
            read();
          }
        });
    };
    read();
    // Live: any change of welds or examinations reads the reports again, at most every 3 s.
    let timer: ReturnType<typeof setTimeout> | undefined;
    const unsubscribe = subscribe(() => {
      timer ??= setTimeout(() => {
        timer = undefined;
        read();
      }, 3000);
    });
    return () => {
      gone = true;
      clearTimeout(timer);
      unsubscribe();
    };
  }, [shell.revision]);

  if (!mayUseDashboard(shell.user)) {
    return (
      <>
        <Heading>Dashboard</Heading>
        <p>The dashboard is for engineers and admins.</p>
      </>
    );
  }
  return (
    <>
      <Heading>Dashboard</Heading>
      {error !== undefined && <ErrorNotice error={error} />}
      {!reports ? (
        <p aria-busy="true">Reading the reports…</p>
      ) : (
        <div class="dashboard">
          <Progress weeks={reports.weeks} area={area} setArea={setArea} />
          <RepairRates welders={reports.welders} month={month} setMonth={setMonth} />
          <Backlog rows={reports.backlog} />
          <Packages rows={reports.packages} />
        </div>
      )}
    </>
  );
}

/** A chart and, beneath it, the table of its numbers; the canvas says where the table is. */
function Figure(props: {
  id: string;
  title: string;
  config: ChartConfiguration;
  children: ComponentChildren;
  controls?: ComponentChildren;
}) {
  const canvas = useRef<HTMLCanvasElement>(null);
  useEffect(() => {
    const chart = new Chart(canvas.current!, {
      ...props.config,
      options: { animation: false, maintainAspectRatio: false, ...props.config.options },
    });
    return () => chart.destroy();
  }, [JSON.stringify(props.config.data)]);
  return (
    <figure class="chart-figure" aria-labelledby={`${props.id}-title`}>
      <figcaption id={`${props.id}-title`}>{props.title}</figcaption>
      {props.controls}
      <div class="chart">
        <canvas
          ref={canvas}
          role="img"
          aria-label={`${props.title}: the numbers are in the table below`}
        />
      </div>
      {props.children}
    </figure>
  );
}

const percent = (part: number, whole: number) =>
  whole === 0 ? null : Math.round((1000 * part) / whole) / 10;

function Progress(props: { weeks: WeekRow[]; area: string; setArea: (area: string) => void }) {
  const areas = useMemo(
    () => [...new Set(props.weeks.map((w) => w.area ?? '(no area)'))].sort(),
    [props.weeks],
  );
  const weeks = useMemo(() => {
    const byWeek = new Map<string, { welded: number; accepted: number }>();
    for (const row of props.weeks) {
      if (props.area && (row.area ?? '(no area)') !== props.area) continue;
      const week = byWeek.get(row.week) ?? { welded: 0, accepted: 0 };
      week.welded += row.welded;
      week.accepted += row.accepted;
      byWeek.set(row.week, week);
    }
    let welded = 0;
    let accepted = 0;
    return [...byWeek.entries()]
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([week, n]) => ({
        week,
        ...n,
        weldedSoFar: (welded += n.welded),
        acceptedSoFar: (accepted += n.accepted),
      }));
  }, [props.weeks, props.area]);
  return (
    <Figure
      id="progress"
      title={`Welds made and accepted, week by week${props.area ? ` (area ${props.area})` : ''}`}
      controls={
        <div class="field">
          <label for="progress-area">Area</label>
          <select
            id="progress-area"
            value={props.area}
            onChange={(e) => props.setArea((e.target as HTMLSelectElement).value)}
          >
            <option value="">All areas</option>
            {areas.map((a) => (
              <option key={a} value={a}>
                {a}
              </option>
            ))}
          </select>
        </div>
      }
      config={{
        type: 'line',
        data: {
          labels: weeks.map((w) => w.week),
          datasets: [
            {
              label: 'Welded, so far',
              data: weeks.map((w) => w.weldedSoFar),
              borderColor: '#1d4ed8',
            },
            {
              label: 'Accepted, so far',
              data: weeks.map((w) => w.acceptedSoFar),
              borderColor: '#15803d',
            },
          ],
        },
      }}
    >
      <details>
        <summary>The numbers, week by week</summary>
        <table>
          <thead>
            <tr>
              <th scope="col">Week of</th>
              <th scope="col">Welded</th>
              <th scope="col">Accepted</th>
              <th scope="col">Welded so far</th>
              <th scope="col">Accepted so far</th>
            </tr>
          </thead>
          <tbody>
            {weeks.map((w) => (
              <tr key={w.week}>
                <th scope="row">{w.week}</th>
                <td>{w.welded}</td>
                <td>{w.accepted}</td>
                <td>{w.weldedSoFar}</td>
                <td>{w.acceptedSoFar}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </details>
    </Figure>
  );
}

function RepairRates(props: {
  welders: WelderRow[];
  month: string;
  setMonth: (m: string) => void;
}) {
  const months = useMemo(
    () => [...new Set(props.welders.map((w) => w.month))].sort().reverse(),
    [props.welders],
  );
  const threshold = props.welders[0]?.thresholdPercent ?? 5;
  const welders = useMemo(() => {
    const byStamp = new Map<string, { name: string; examined: number; rejected: number }>();
    for (const row of props.welders) {
      if (props.month && row.month !== props.month) continue;
      const w = byStamp.get(row.welderStamp) ?? { name: row.welderName, examined: 0, rejected: 0 };
      w.examined += row.weldsExamined;
      w.rejected += row.weldsRejected;
      byStamp.set(row.welderStamp, w);
    }
    return [...byStamp.entries()]
      .map(([stamp, w]) => ({ stamp, ...w, rate: percent(w.rejected, w.examined) }))
      .filter((w) => w.examined > 0)
      .sort((a, b) => b.rate! - a.rate! || a.stamp.localeCompare(b.stamp));
  }, [props.welders, props.month]);
  return (
    <Figure
      id="repairs"
      title={`Repair rate per welder (RT and UT, by joint) against the ${threshold} % threshold${props.month ? `, ${props.month.slice(0, 7)}` : ''}`}
      controls={
        <div class="field">
          <label for="repairs-month">Month welded</label>
          <select
            id="repairs-month"
            value={props.month}
            onChange={(e) => props.setMonth((e.target as HTMLSelectElement).value)}
          >
            <option value="">All months</option>
            {months.map((m) => (
              <option key={m} value={m}>
                {m.slice(0, 7)}
              </option>
            ))}
          </select>
        </div>
      }
      config={{
        type: 'bar',
        data: {
          labels: welders.map((w) => w.stamp),
          datasets: [
            {
              type: 'bar',
              label: 'Repair rate, %',
              data: welders.map((w) => w.rate),
              backgroundColor: welders.map((w) => (w.rate! > threshold ? '#b91c1c' : '#1d4ed8')),
            },
            {
              type: 'line',
              label: `Threshold, ${threshold} %`,
              data: welders.map(() => threshold),
              borderColor: '#92400e',
              pointRadius: 0,
            },
          ],
        },
      }}
    >
      <table>
        <thead>
          <tr>
            <th scope="col">Welder</th>
            <th scope="col">Examined</th>
            <th scope="col">Rejected</th>
            <th scope="col">Repair rate</th>
          </tr>
        </thead>
        <tbody>
          {welders.map((w) => (
            <tr key={w.stamp} class={w.rate! > threshold ? 'over' : undefined}>
              <th scope="row">
                {w.stamp} {w.name}
              </th>
              <td>{w.examined}</td>
              <td>{w.rejected}</td>
              <td>
                {w.rate} %{w.rate! > threshold ? ' (over the threshold)' : ''}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {welders.length === 0 && <p>No weld of this period was examined by RT or UT.</p>}
    </Figure>
  );
}

const AGES = [
  ['days0To7', '0 to 7 days', '#60a5fa'],
  ['days8To30', '8 to 30 days', '#2563eb'],
  ['days31To90', '31 to 90 days', '#d97706'],
  ['daysOver90', 'over 90 days', '#b91c1c'],
] as const;

function Backlog({ rows }: { rows: BacklogRow[] }) {
  return (
    <Figure
      id="backlog"
      title="Examinations drawn and not yet done, per method, by age"
      config={{
        type: 'bar',
        data: {
          labels: rows.map((r) => r.method),
          datasets: AGES.map(([key, label, color]) => ({
            label,
            data: rows.map((r) => r[key]),
            backgroundColor: color,
          })),
        },
        options: {
          scales: { x: { stacked: true }, y: { stacked: true, ticks: { precision: 0 } } },
        },
      }}
    >
      <table>
        <thead>
          <tr>
            <th scope="col">Method</th>
            <th scope="col">Open</th>
            {AGES.map(([key, label]) => (
              <th key={key} scope="col">
                {label}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {rows.map((r) => (
            <tr key={r.method}>
              <th scope="row">{r.method}</th>
              <td>{r.open}</td>
              {AGES.map(([key]) => (
                <td key={key}>{r[key]}</td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
      {rows.length === 0 && <p>No examination is waiting.</p>}
    </Figure>
  );
}

const STATES = ['open', 'released', 'tested', 'closed'] as const;

function Packages({ rows }: { rows: PackageRow[] }) {
  const counts = STATES.map((state) => ({
    state,
    ready: rows.filter((r) => r.state === state && r.ready).length,
    notReady: rows.filter((r) => r.state === state && !r.ready).length,
  }));
  return (
    <Figure
      id="packages"
      title="Test packages by state"
      config={{
        type: 'bar',
        data: {
          labels: [...STATES],
          datasets: [
            { label: 'Ready', data: counts.map((c) => c.ready), backgroundColor: '#15803d' },
            { label: 'Not ready', data: counts.map((c) => c.notReady), backgroundColor: '#9ca3af' },
          ],
        },
        options: {
          scales: { x: { stacked: true }, y: { stacked: true, ticks: { precision: 0 } } },
        },
      }}
    >
      <table>
        <thead>
          <tr>
            <th scope="col">State</th>
            <th scope="col">Ready</th>
            <th scope="col">Not ready</th>
          </tr>
        </thead>
        <tbody>
          {counts.map((c) => (
            <tr key={c.state}>
              <th scope="row">{c.state}</th>
              <td>{c.ready}</td>
              <td>{c.notReady}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </Figure>
  );
}
