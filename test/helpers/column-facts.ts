// The column facts of the catalog, and the same facts of a zod type, in one shape to compare
// (test/db/column-facts.test.ts): a column's type, nullability, default, CHECK constraints
// (lengths, patterns, allowed values, bounds, dates, list sizes), numeric precision, comment and
// the words of its constraints; a zod type's from its JSON schema (what OpenAPI shows) and, for
// what that cannot show (a date's range, trimming), by trying values. The facts of the SQL
// functions that write a resource from JSON (record_ndt, ...) are read from their source. Then
// the comparison of the two, difference by difference.
import { z } from 'zod';
import { plainWords } from '../../db/plain-words.ts';
import { superuserQuery } from './database.ts';

//------------------------------------------------------------------------------------------------
// The catalog

export interface Column {
  table: string;
  name: string;
  udt: string;
  /** 'e' for an enum type, 'b' for a base type. */
  typtype: string;
  nullable: boolean;
  hasDefault: boolean;
  varcharLength: number | null;
  precision: number | null;
  scale: number | null;
  comment: string | null;
  enumLabels: string[] | null;
}

export interface Check {
  table: string;
  name: string;
  def: string;
  comment: string | null;
}

export interface Catalog {
  columns: Map<string, Column>;
  tables: Map<string, { columns: string[]; comment: string | null }>;
  checks: Check[];
}

export async function readCatalog(rootUrl: string): Promise<Catalog> {
  const columns = await superuserQuery<Column>(
    rootUrl,
    `select c.table_schema || '.' || c.table_name as "table", c.column_name as name,
            c.udt_name as udt, t.typtype, c.is_nullable = 'YES' as nullable,
            (c.column_default is not null or c.is_identity = 'YES') as "hasDefault",
            c.character_maximum_length as "varcharLength",
            case when c.data_type = 'numeric' then c.numeric_precision end as precision,
            case when c.data_type = 'numeric' then c.numeric_scale end as scale,
            col_description(format('%I.%I', c.table_schema, c.table_name)::regclass,
                            c.ordinal_position) as comment,
            case when t.typtype = 'e' then array(select e.enumlabel::text from pg_enum e
                                                   where e.enumtypid = t.oid
                                                   order by e.enumsortorder) end as "enumLabels"
       from information_schema.columns c
       join pg_type t on t.typname = c.udt_name and t.typnamespace = c.udt_schema::regnamespace
      where c.table_schema in ('weld_public', 'weld_hidden')
      order by c.table_schema, c.table_name, c.ordinal_position`,
  );
  const tableComments = await superuserQuery<{ table: string; comment: string | null }>(
    rootUrl,
    `select c.oid::regclass::text as "table", obj_description(c.oid, 'pg_class') as comment
       from pg_class c
      where c.relnamespace in ('weld_public'::regnamespace, 'weld_hidden'::regnamespace)
        and c.relkind in ('r', 'p')`,
  );
  const checks = await superuserQuery<Check>(
    rootUrl,
    `select c.conrelid::regclass::text as "table", c.conname as name,
            pg_get_constraintdef(c.oid) as def, obj_description(c.oid, 'pg_constraint') as comment
       from pg_constraint c
      where c.contype = 'c' and c.conrelid <> 0
        and c.connamespace in ('weld_public'::regnamespace, 'weld_hidden'::regnamespace)
      order by c.conname`,
  );
  const tables = new Map<string, { columns: string[]; comment: string | null }>();
  for (const { table, comment } of tableComments) tables.set(table, { columns: [], comment });
  for (const column of columns) tables.get(column.table)?.columns.push(column.name);
  return {
    columns: new Map(columns.map((c) => [`${c.table}.${c.name}`, c])),
    tables,
    checks,
  };
}

//------------------------------------------------------------------------------------------------
// What the catalog says of one column

/** The facts of a value, as SQL or TypeScript states them (absent: not stated). */
export interface Facts {
  type?: string;
  nullable?: boolean;
  minLength?: number;
  maxLength?: number;
  /** Lengths count the text without its leading and trailing blanks (btrim / .trim()). */
  trimmed?: boolean;
  pattern?: string;
  enum?: string[];
  minimum?: number;
  exclusiveMinimum?: number;
  maximum?: number;
  /** The dates allowed, first and last. */
  from?: string;
  to?: string;
  minItems?: number;
  maxItems?: number;
  items?: Facts;
  description?: string;
}

export interface ColumnFacts extends Facts {
  hasDefault: boolean;
  /** The words of the CHECK that refuses a value breaking the fact (its constraint comment). */
  messages: Partial<Record<'pattern' | 'enum' | 'dates', string>>;
  /** Parts of single-column CHECKs this test cannot read: a new kind of rule to teach it. */
  unread: string[];
}

/** The end of the parenthesis opening at `start`, skipping quoted literals. */
function closing(text: string, start: number): number {
  let depth = 0;
  let quoted = false;
  for (let i = start; i < text.length; i++) {
    const c = text[i];
    if (c === "'") quoted = !quoted;
    else if (!quoted && c === '(') depth++;
    else if (!quoted && c === ')' && --depth === 0) return i;
  }
  return -1;
}

/** The terms of an expression joined by AND at its top level, recursively, without parentheses. */
function conjuncts(expression: string): string[] {
  let e = expression.trim();
  while (e.startsWith('(') && closing(e, 0) === e.length - 1) e = e.slice(1, -1).trim();
  const parts: string[] = [];
  let depth = 0;
  let quoted = false;
  let from = 0;
  for (let i = 0; i < e.length; i++) {
    const c = e[i];
    if (c === "'") quoted = !quoted;
    else if (!quoted && c === '(') depth++;
    else if (!quoted && c === ')') depth--;
    else if (!quoted && depth === 0 && e.startsWith(' AND ', i)) {
      parts.push(e.slice(from, i));
      from = i + 5;
    }
  }
  parts.push(e.slice(from));
  return parts.length === 1 ? [e] : parts.flatMap(conjuncts);
}

/** The columns of `table` a term names (outside its quoted literals). */
const columnsNamed = (term: string, tableColumns: string[]) =>
  new Set(
    (term.replace(/'(?:[^']|'')*'/g, "''").match(/\b[a-z_][a-z0-9_]*\b/g) ?? []).filter((w) =>
      tableColumns.includes(w),
    ),
  );

const literals = (list: string) =>
  [...list.matchAll(/'((?:[^']|'')*)'::text/g)].map((m) => m[1]!.replaceAll("''", "'"));
const unquote = (literal: string) => literal.replaceAll("''", "'");

/** The largest magnitude a numeric(p, s) holds: 999.999 for numeric(6, 3). */
const numericLimit = (precision: number, scale: number) =>
  Number(`${'9'.repeat(precision - scale) || '0'}.${'9'.repeat(scale) || '0'}`);

const SQL_TYPES: Record<string, string> = {
  text: 'string',
  varchar: 'string',
  citext: 'string',
  int2: 'integer',
  int4: 'integer',
  int8: 'integer',
  numeric: 'number',
  bool: 'boolean',
  date: 'date',
  timestamptz: 'datetime',
  uuid: 'uuid',
  _text: 'array',
  _int4: 'array',
  jsonb: 'object',
};

/** The facts of table.column as its type and CHECK constraints state them. */
export function columnFacts(
  catalog: Catalog,
  table: string,
  name: string,
): ColumnFacts | undefined {
  const column = catalog.columns.get(`${table}.${name}`);
  if (!column) return undefined;
  const tableColumns = catalog.tables.get(table)?.columns ?? [];
  const facts: ColumnFacts = {
    type: column.typtype === 'e' ? 'string' : (SQL_TYPES[column.udt] ?? column.udt),
    nullable: column.nullable,
    hasDefault: column.hasDefault,
    messages: {},
    unread: [],
    ...(column.enumLabels && { enum: column.enumLabels }),
    ...(column.varcharLength !== null && { maxLength: column.varcharLength }),
    ...(column.comment !== null && { description: column.comment }),
  };
  if (column.udt === '_text') facts.items = { type: 'string' };
  if (column.udt === '_int4') facts.items = { type: 'integer' };
  const c = name;
  const lowerBounds: string[] = [];
  for (const check of catalog.checks.filter((k) => k.table === table)) {
    const body = /^CHECK \((.*)\)(?: NOT VALID)?$/s.exec(check.def)?.[1] ?? check.def;
    for (const term of conjuncts(body)) {
      const named = columnsNamed(term, tableColumns);
      if (!named.has(c)) continue;
      if (named.size > 1) {
        // A rule relating two columns: only "c >= other" says something of c alone (a bound,
        // when the other column has one and cannot be null).
        const relation = new RegExp(`^${c} >= ([a-z_0-9]+)$`).exec(term);
        if (relation) lowerBounds.push(relation[1]!);
        // "LEAST(a, b, ...) >= n": each of them is n or more
        const least = /^LEAST\(([a-z_0-9, ]+)\) >= (\d+)$/.exec(term);
        if (least?.[1]!.split(', ').includes(c)) facts.minimum = Number(least[2]);
        continue;
      }
      let m: RegExpExecArray | null;
      if ((m = new RegExp(`^char_length\\((btrim\\()?${c}\\)?\\) (>=|<=) (\\d+)$`).exec(term))) {
        if (m[1]) facts.trimmed = true;
        if (m[2] === '>=') facts.minLength = Number(m[3]);
        else facts.maxLength = Math.min(Number(m[3]), facts.maxLength ?? Infinity);
      } else if ((m = new RegExp(`^${c} ~ '((?:[^']|'')*)'::(?:text|citext)$`).exec(term))) {
        facts.pattern = unquote(m[1]!);
        if (check.comment) facts.messages.pattern = check.comment;
      } else if ((m = new RegExp(`^${c} = ANY \\(ARRAY\\[(.*)\\]\\)$`).exec(term))) {
        facts.enum = literals(m[1]!);
        if (check.comment) facts.messages.enum = check.comment;
      } else if ((m = new RegExp(`^${c} = ('(?:[^']|'')*'::text)$`).exec(term))) {
        facts.enum = literals(m[1]!);
      } else if ((m = new RegExp(`^${c} <@ ARRAY\\[(.*)\\]$`).exec(term))) {
        facts.items = { ...facts.items, enum: literals(m[1]!), nullable: false };
      } else if (
        (m = new RegExp(`^${c} (>=|>|<=|<) \\(?'?(-?[0-9.]+)'?\\)?(?:::(?:numeric|bigint))?$`).exec(
          term,
        ))
      ) {
        const value = Number(m[2]);
        if (m[1] === '>=') facts.minimum = Math.max(value, facts.minimum ?? -Infinity);
        else if (m[1] === '>') facts.exclusiveMinimum = value;
        else if (m[1] === '<=') facts.maximum = value;
        else facts.unread.push(`${check.name}: ${term}`);
      } else if ((m = new RegExp(`^${c} (>=|<=) '([0-9-]{10})'::date$`).exec(term))) {
        if (m[1] === '>=') facts.from = m[2]!;
        else facts.to = m[2]!;
        if (check.comment) facts.messages.dates = check.comment;
      } else if ((m = new RegExp(`^(-?\\d+) (<=|>=) ALL \\(${c}\\)$`).exec(term))) {
        // every item at least (or at most) the number
        if (m[2] === '<=') facts.items = { ...facts.items, minimum: Number(m[1]) };
        else facts.items = { ...facts.items, maximum: Number(m[1]) };
      } else if (new RegExp(`^array_position\\(${c}, NULL::\\w+\\) IS NULL$`).test(term)) {
        facts.items = { ...facts.items, nullable: false };
      } else if ((m = new RegExp(`^cardinality\\(${c}\\) (>=|<=) (\\d+)$`).exec(term))) {
        if (m[1] === '>=') facts.minItems = Number(m[2]);
        else facts.maxItems = Number(m[2]);
      } else if (
        (m = new RegExp(
          `^array_to_string\\(${c}, ','::text, '\\?'::text\\) ~ '\\^(.+)\\(,\\1\\)(\\?|\\*)\\$'::text$`,
        ).exec(term))
      ) {
        // one item, then more after commas: '^X(,X)?$' is one or two items of pattern '^X$'
        facts.items = { ...facts.items, pattern: `^${unquote(m[1]!)}$`, nullable: false };
        facts.minItems = Math.max(facts.minItems ?? 0, 1);
        if (m[2] === '?') facts.maxItems = Math.min(facts.maxItems ?? Infinity, 2);
        if (check.comment) facts.messages.pattern = check.comment;
      } else if (
        // no NaN (JSON has none), and the shape of an array (JSON has no other)
        !new RegExp(
          `^(${c} <> 'NaN'::numeric|array_ndims\\(${c}\\) = 1|array_lower\\(${c}, 1\\) = 1)$`,
        ).test(term)
      ) {
        facts.unread.push(`${check.name}: ${term}`);
      }
    }
  }
  if (facts.type === 'number' && column.precision !== null && column.scale !== null) {
    const limit = numericLimit(column.precision, column.scale);
    facts.maximum = Math.min(facts.maximum ?? limit, limit);
    if (facts.minimum === undefined && facts.exclusiveMinimum === undefined) {
      // "c >= other", the other not null and bounded: c has the other's lower bound
      for (const other of lowerBounds) {
        const o = columnFacts(catalog, table, other);
        if (o && !o.nullable && o.minimum !== undefined) facts.minimum = o.minimum;
      }
      if (facts.minimum === undefined) facts.minimum = -limit;
    }
  }
  if (facts.type === 'integer') {
    // JSON numbers are exact to 2^53 - 1: what zod's int() allows when nothing else is said
    if (facts.minimum === undefined && facts.exclusiveMinimum === undefined)
      facts.minimum = Number.MIN_SAFE_INTEGER;
    facts.maximum ??= Number.MAX_SAFE_INTEGER;
  }
  return facts;
}

//------------------------------------------------------------------------------------------------
// What TypeScript says of one value

export type JsonSchema = Record<string, unknown> & {
  anyOf?: JsonSchema[];
  items?: JsonSchema;
  properties?: Record<string, JsonSchema>;
  required?: string[];
};

export const jsonSchema = (type: z.ZodType, io: 'input' | 'output' = 'input') =>
  z.toJSONSchema(type, { io, unrepresentable: 'any', target: 'draft-2020-12' }) as JsonSchema;

export function schemaFacts(schema: JsonSchema): Facts {
  if (Array.isArray(schema.type) && schema.type.includes('null')) {
    const rest = (schema.type as string[]).filter((t) => t !== 'null');
    return {
      ...schemaFacts({ ...schema, type: rest.length === 1 ? rest[0] : rest }),
      nullable: true,
    };
  }
  const branches = schema.anyOf;
  if (branches?.some((b) => b.type === 'null')) {
    const rest = branches.filter((b) => b.type !== 'null');
    return { ...(rest.length === 1 ? schemaFacts(rest[0]!) : {}), nullable: true };
  }
  const format = schema.format as string | undefined;
  const type =
    format === 'uuid'
      ? 'uuid'
      : format === 'date'
        ? 'date'
        : format === 'date-time'
          ? 'datetime'
          : schema.type === 'object' || schema.type === undefined
            ? 'object'
            : (schema.type as string);
  const facts: Facts = { type, nullable: false };
  for (const key of [
    'minLength',
    'maxLength',
    'minimum',
    'exclusiveMinimum',
    'maximum',
    'minItems',
    'maxItems',
    'description',
  ] as const) {
    if (schema[key] !== undefined) (facts as Record<string, unknown>)[key] = schema[key];
  }
  if (schema.pattern !== undefined && type === 'string') facts.pattern = schema.pattern as string;
  if (schema.enum) facts.enum = schema.enum as string[];
  if (schema.const !== undefined) facts.enum = [schema.const as string];
  if (schema.items) facts.items = schemaFacts(schema.items);
  return facts;
}

/** The facts of a zod type, read from its JSON schema and, for what that does not show, by use. */
export function typeFacts(type: z.ZodType): Facts {
  const facts = schemaFacts(jsonSchema(type));
  if (facts.type === 'string') {
    const padded = type.safeParse(' x ');
    if (padded.success && padded.data === 'x') facts.trimmed = true;
  }
  if (facts.type === 'date') {
    // A date's range is a refinement, which JSON schema cannot show: found by trying days.
    const accepts = (day: string) => type.safeParse(day).success;
    const first = ['1900-01-01', '0001-01-01'].find(accepts);
    const last = ['2200-12-31', '9999-12-31'].find(accepts);
    if (first && !accepts(previousDay(first))) facts.from = first;
    if (last && last !== '9999-12-31' && !accepts(nextDay(last))) facts.to = last;
  }
  facts.description ??= type.description;
  return facts;
}

const day = (iso: string, delta: number) =>
  new Date(Date.parse(`${iso}T00:00:00Z`) + delta * 86_400_000).toISOString().slice(0, 10);
export const previousDay = (iso: string) => day(iso, -1);
const nextDay = (iso: string) => day(iso, 1);

/** The 422 detail TypeScript gives a value breaking the fact, when it has words of its own. */
export function ownMessage(type: z.ZodType, value: unknown): string | undefined {
  const result = type.safeParse(value);
  const issue = result.success ? undefined : result.error.issues[0];
  // the words every field gets (db/plain-words.ts: "must be one of ...") are no restated fact
  return issue && issue.message !== plainWords(issue as z.core.$ZodRawIssue)
    ? issue.message
    : undefined;
}

//------------------------------------------------------------------------------------------------
// Descriptions

/**
 * A comment or description as words to compare: without PostGraphile's smart tags (the lines
 * starting with @), its first letter lower-case, without the final period, and column names
 * spelled as REST spells the fields.
 */
export function words(text: string, names: Record<string, string>): string {
  const plain = text
    .split('\n')
    .filter((line) => !line.startsWith('@'))
    .join(' ')
    .trim()
    .replace(/\.$/, '');
  const renamed = plain.replace(/\b[a-z][a-z0-9]*(?:_[a-z0-9]+)+\b/g, (w) => names[w] ?? w);
  return renamed.charAt(0).toLowerCase() + renamed.slice(1);
}

/**
 * Two descriptions say the same where one is the other, or begins with it and goes on after a
 * clause ends (REST adds what only REST says, or says the first clause of a longer comment).
 */
export function sameWords(a: string, b: string): boolean {
  const [short, long] = a.length <= b.length ? [a, b] : [b, a];
  return long === short || (long.startsWith(short) && /^[.;:,] /.test(long.slice(short.length)));
}

//------------------------------------------------------------------------------------------------
// The SQL functions that write a resource from JSON

/** What the functions writing one table from JSON check of their input. */
export interface WriterFacts {
  /** The functions read, by name. */
  functions: string[];
  /** The keys of each object they check (check_object): '' the input, 'welds[]' a list's item. */
  objects: Map<string, Map<string, { allowed: string[]; required: string[] }>>;
  /** The facts of each value, by path ('notes', 'welds[].result'), per function. */
  values: Map<string, Map<string, Facts>>;
}

/**
 * The checks of weld_private's JSON readers in a function's source: json_string(obj, key, pointer,
 * min, max, nullable), json_choice(obj, key, pointer, choices, nullable), json_date(obj, key,
 * pointer), json_list / json_uuid_list(obj, key, pointer, min, max) and check_object(obj, pointer,
 * what, allowed, required). `obj` is `input` (the JSON given) or, in a helper that reads a list's
 * items, `item`: its paths are "<list>[].<key>".
 */
function readerFacts(source: string, list?: string) {
  const values = new Map<string, Facts>();
  const objects = new Map<string, { allowed: string[]; required: string[] }>();
  const path = (object: string, key: string) =>
    object === 'input' || !list ? key : `${list}[].${key}`;
  const set = (at: string, facts: Facts) => values.set(at, { ...values.get(at), ...facts });
  const ARG = String.raw`(\w+), '(\w+)', [^,]+`;
  for (const m of source.matchAll(
    new RegExp(String.raw`json_string\(${ARG}, (\d+), (\d+), (true|false)\)`, 'g'),
  )) {
    set(path(m[1]!, m[2]!), {
      type: 'string',
      nullable: m[5] === 'true',
      ...(Number(m[3]) > 0 && { minLength: Number(m[3]) }),
      maxLength: Number(m[4]),
    });
  }
  for (const m of source.matchAll(
    new RegExp(String.raw`json_choice\(${ARG}, '\{([^}]*)\}', (true|false)\)`, 'g'),
  )) {
    set(path(m[1]!, m[2]!), { type: 'string', enum: m[3]!.split(','), nullable: m[4] === 'true' });
  }
  for (const m of source.matchAll(new RegExp(String.raw`json_date\(${ARG}\)`, 'g'))) {
    set(path(m[1]!, m[2]!), { type: 'date', nullable: false });
  }
  for (const m of source.matchAll(
    new RegExp(String.raw`json_(uuid_)?list\(${ARG}, (\d+), (\d+)\)`, 'g'),
  )) {
    set(path(m[2]!, m[3]!), {
      type: 'array',
      nullable: false,
      ...(Number(m[4]) > 0 && { minItems: Number(m[4]) }),
      maxItems: Number(m[5]),
      ...(m[1] && { items: { type: 'uuid', nullable: false } }),
    });
  }
  // the texts of a list checked one by one: "<var> := ...json_list(item, '<key>', ...)", then
  // "char_length(<code> #>> '{}') not between <min> and <max>" in the loop over <var>
  for (const m of source.matchAll(
    /(\w+) := weld_private\.json_list\((\w+), '(\w+)'[\s\S]*?jsonb_array_elements\(\1\)[\s\S]*?char_length\(\w+ #>> '\{\}'\) not between (\d+) and (\d+)/g,
  )) {
    const at = path(m[2]!, m[3]!);
    set(at, {
      items: {
        type: 'string',
        nullable: false,
        minLength: Number(m[4]),
        maxLength: Number(m[5]),
      },
    });
  }
  // a text read, then matched: "<var> := ...json_string(obj, '<key>', ...); if <var> !~ '<pattern>'"
  for (const m of source.matchAll(
    /(\w+) := weld_private\.json_string\((\w+), '(\w+)'[^;]*;\s*if \1 !~ '((?:[^']|'')*)'/g,
  )) {
    set(path(m[2]!, m[3]!), { pattern: m[4]!.replaceAll("''", "'") });
  }
  for (const m of source.matchAll(
    /check_object\((\w+),[\s\S]*?'\{([^}]*)\}',\s*'\{([^}]*)\}'\)/g,
  )) {
    const split = (list: string) => (list ? list.split(',') : []);
    objects.set(m[1] === 'input' || !list ? '' : `${list}[]`, {
      allowed: split(m[2]!),
      required: split(m[3]!),
    });
  }
  return { values, objects };
}

/**
 * What the functions of weld_public returning a row of `table` and named record_* or correct_*
 * (record_ndt, correct_ndt_record) check of their JSON, helpers that read a list (the
 * weld_private.*_input they call) included.
 */
export async function writerFacts(rootUrl: string, table: string): Promise<WriterFacts> {
  const sources = await superuserQuery<{ name: string; source: string }>(
    rootUrl,
    `select p.proname as name, p.prosrc as source from pg_proc p
      where p.pronamespace = 'weld_public'::regnamespace and p.prorettype = $1::regtype
        and p.proname ~ '^(record|correct)_'
      order by p.proname`,
    [table],
  );
  const helpers = await superuserQuery<{ name: string; source: string }>(
    rootUrl,
    `select p.proname as name, p.prosrc as source from pg_proc p
      where p.pronamespace = 'weld_private'::regnamespace and p.proname like '%\\_input'`,
  );
  const result: WriterFacts = { functions: [], objects: new Map(), values: new Map() };
  for (const { name, source } of sources) {
    const { values, objects } = readerFacts(source);
    for (const helper of helpers.filter((h) => source.includes(`weld_private.${h.name}(`))) {
      const list = /json_list\(input, '(\w+)'/.exec(helper.source)?.[1];
      const read = readerFacts(helper.source, list);
      for (const [at, facts] of read.values) values.set(at, { ...values.get(at), ...facts });
      for (const [at, keys] of read.objects) objects.set(at, keys);
    }
    result.functions.push(name);
    result.values.set(name, values);
    result.objects.set(name, objects);
  }
  return result;
}

/** Which of `columns` of `table` `role` may insert and update. */
export async function columnPrivileges(
  rootUrl: string,
  table: string,
  columns: string[],
  role: string,
): Promise<Map<string, { insert: boolean; update: boolean }>> {
  const rows = await superuserQuery<{ column: string; insert: boolean; update: boolean }>(
    rootUrl,
    `select c as "column", has_column_privilege($1, $2::regclass, c, 'INSERT') as insert,
            has_column_privilege($1, $2::regclass, c, 'UPDATE') as update
       from unnest($3::text[]) c`,
    [role, table, columns],
  );
  return new Map(rows.map((r) => [r.column, { insert: r.insert, update: r.update }]));
}

//------------------------------------------------------------------------------------------------
// Comparing

export interface Failure {
  /** "<resource>.<field>" or "<schema>.<property>". */
  where: string;
  fact: string;
  text: string;
}

export const show = (value: unknown) => (value === undefined ? 'unstated' : JSON.stringify(value));

export const COMPARED = [
  'type',
  'nullable',
  'minLength',
  'maxLength',
  'trimmed',
  'pattern',
  'enum',
  'minimum',
  'exclusiveMinimum',
  'maximum',
  'from',
  'to',
  'minItems',
  'maxItems',
] as const;
export type Compared = (typeof COMPARED)[number];

/**
 * The facts that differ. `only` limits the comparison to facts TypeScript states (an answer may
 * say less than its column; a filter need not repeat the column's minimum).
 */
export function differences(
  ts: Facts,
  sql: Facts,
  options: { only?: 'stated'; skip?: Compared[] } = {},
  prefix = '',
): { fact: string; ts: unknown; sql: unknown }[] {
  const found: { fact: string; ts: unknown; sql: unknown }[] = [];
  for (const key of COMPARED) {
    if (options.skip?.includes(key)) continue;
    let t: unknown = ts[key];
    let s: unknown = sql[key];
    if (key === 'trimmed') [t, s] = [t ?? false, s ?? false];
    if (options.only === 'stated') {
      // zod's int() states the range of exact JSON numbers: no fact of the column
      if (t === undefined || Math.abs(t as number) === Number.MAX_SAFE_INTEGER) continue;
    }
    // a pattern bounds a text's length: lengths stated on one side only add nothing
    if ((key === 'minLength' || key === 'maxLength') && ts.pattern && ts.pattern === sql.pattern)
      if (t === undefined || s === undefined) continue;
    // allowed values are a set (zod's enum lists "1" and "2" before "random")
    if (key === 'enum' && Array.isArray(t) && Array.isArray(s))
      [t, s] = [[...t].sort(), [...s].sort()];
    if (JSON.stringify(t) !== JSON.stringify(s)) found.push({ fact: prefix + key, ts: t, sql: s });
  }
  // a list of objects is walked property by property (checkWriterBodies)
  if (sql.items) {
    found.push(...differences(ts.items ?? {}, sql.items ?? {}, options, `${prefix}items.`));
  }
  return found;
}

export class Findings {
  readonly failures: Failure[] = [];
  readonly facts = new Set<string>();
  values = 0;

  add(where: string, fact: string, text: string): void {
    this.failures.push({ where, fact, text });
  }

  /** Each difference of `ts` from `sql` at `where` (`column` names the column in the message). */
  compare(where: string, column: string, ts: Facts, sql: Facts, options = {}): void {
    this.values++;
    for (const key of COMPARED) if (sql[key] !== undefined) this.facts.add(key);
    for (const d of differences(ts, sql, options)) {
      this.add(
        where,
        d.fact,
        `${where} (${column}) ${d.fact}: TypeScript ${show(d.ts)}, SQL ${show(d.sql)}`,
      );
    }
  }

  /** Descriptions, where both have one, say the same (see sameWords). */
  describe(
    where: string,
    what: string,
    ts: string | undefined,
    sql: string | null | undefined,
    names: Record<string, string>,
  ): void {
    if (!ts || !sql) return;
    const [rest, comment] = [words(ts, names), words(sql, names)];
    if (comment && !sameWords(rest, comment))
      this.add(
        where,
        'description',
        `${where} description: TypeScript ${show(rest)}, SQL (${what}) ${show(comment)}`,
      );
  }

  /**
   * The failures none of `differences` ("<where> <fact>": why) excuses, and the differences
   * that excuse none.
   */
  unexcused(differences: Record<string, string>): { failures: string[]; stale: string[] } {
    const used = new Set<string>();
    const failures = this.failures.flatMap((f) => {
      const key = `${f.where} ${f.fact}`;
      if (key in differences) {
        used.add(key);
        return [];
      }
      return [f.text];
    });
    return { failures, stale: Object.keys(differences).filter((key) => !used.has(key)) };
  }
}
