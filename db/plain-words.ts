// What a client, a CSV user or an operator reads when a value is refused: plain words, not zod's
// type jargon ("must be text", not "Invalid input: expected string, received number"). Installed
// once for the process as zod's error map (z.config), so every parse says it the same way: request
// bodies and parameters, CSV rows, configuration. A schema's own message (.refine, .regex with a
// message) still wins: zod asks this map only where a schema says nothing.
import { z } from 'zod';

type Issue = z.core.$ZodRawIssue;

const TYPES: Record<string, string> = {
  string: 'text',
  number: 'a number',
  int: 'a whole number',
  boolean: 'true or false',
  array: 'a list',
  object: 'an object',
  date: 'a date',
  bigint: 'a whole number',
};

const FORMATS: Record<string, string> = {
  uuid: 'a UUID',
  guid: 'a UUID',
  date: 'a date, YYYY-MM-DD',
  datetime: 'a date and time (ISO 8601, e.g. 2026-11-28T09:00:00Z)',
  time: 'a time of day',
  email: 'an email address',
  url: 'a URL',
  base64url: 'base64url text',
  regex: 'in the expected form',
};

/** A value as a person would write it in a list of choices. */
const shown = (value: unknown) => (typeof value === 'string' ? value : JSON.stringify(value));

/** The words for one issue: a phrase to follow the field's name ("must be text"). */
export function plainWords(issue: Issue): string | undefined {
  switch (issue.code) {
    case 'invalid_type': {
      if (issue.input === undefined) return 'is required';
      const expected = TYPES[issue.expected] ?? issue.expected;
      return issue.input === null ? `must be ${expected}, not null` : `must be ${expected}`;
    }
    case 'invalid_value':
      return issue.values.length === 1
        ? `must be ${shown(issue.values[0])}`
        : `must be one of ${issue.values.map(shown).join(', ')}`;
    case 'too_small': {
      const n = Number(issue.minimum);
      if (issue.origin === 'string')
        return n <= 1 ? 'must not be empty' : `must be at least ${n} characters`;
      if (issue.origin === 'array' || issue.origin === 'set')
        return n <= 1 ? 'must not be an empty list' : `must hold at least ${n} items`;
      return issue.inclusive === false ? `must be greater than ${n}` : `must be at least ${n}`;
    }
    case 'too_big': {
      const n = Number(issue.maximum);
      if (issue.origin === 'string') return `must be at most ${n} characters`;
      if (issue.origin === 'array' || issue.origin === 'set') return `must hold at most ${n} items`;
      return issue.inclusive === false ? `must be less than ${n}` : `must be at most ${n}`;
    }
    case 'invalid_format':
      return `must be ${FORMATS[issue.format] ?? issue.format}`;
    case 'not_multiple_of':
      return `must be a multiple of ${String(issue.divisor)}`;
    case 'unrecognized_keys':
      return issue.keys.length === 1
        ? `has a field it does not take: ${issue.keys[0]}`
        : `has fields it does not take: ${issue.keys.join(', ')}`;
    case 'invalid_union':
    case 'invalid_key':
    case 'invalid_element':
    case 'custom':
      return 'is not valid here';
  }
  return undefined;
}

z.config({ customError: plainWords });

/** A field's path as a person reads it: `weldNumber`, `welds[0].result`; `the body` for the root. */
export function fieldName(path: readonly PropertyKey[]): string {
  if (path.length === 0) return 'the body';
  return path
    .map((key, i) => (typeof key === 'number' ? `[${key}]` : (i ? '.' : '') + String(key)))
    .join('');
}

/**
 * One issue per field: the first one zod found, except that of two bounds on one side the
 * tighter is said (size -1 against ">= 0" and "> 0" is "must be greater than 0").
 */
export function oneIssuePerField<T extends z.core.$ZodIssue>(issues: readonly T[]): T[] {
  const byPath = new Map<string, T>();
  for (const issue of issues) {
    // Unknown keys are named one by one (zodIssues), beside what else is wrong with the object.
    const key = JSON.stringify([...issue.path.map(String), issue.code === 'unrecognized_keys']);
    const kept = byPath.get(key);
    if (!kept) byPath.set(key, issue);
    else if (kept.code === 'too_small' && issue.code === 'too_small') {
      if (Number(issue.minimum) > Number(kept.minimum) || issue.inclusive === false)
        byPath.set(key, issue);
    } else if (kept.code === 'too_big' && issue.code === 'too_big') {
      if (Number(issue.maximum) < Number(kept.maximum) || issue.inclusive === false)
        byPath.set(key, issue);
    }
  }
  return [...byPath.values()];
}
