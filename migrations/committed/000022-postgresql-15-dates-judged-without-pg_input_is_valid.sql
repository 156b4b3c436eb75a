--! Previous: sha1:a64c71c51bc9bff128d0669d94c2b3ef5ea53413
--! Hash: sha1:89ec3d8d31b1dc0f78fc16a7a42e3a3d87e9731c
--! Message: PostgreSQL 15: dates judged without pg_input_is_valid

-- PostgreSQL 15 has no pg_input_is_valid. The two functions that read dates called it; now one
-- of them judges a date by its parts and the other asks it (migrations/bootstrap.sql keeps a
-- stand-in on 15 for the older migrations that still name it).
--! Included functions/weld_hidden.import_date.sql
-- A date as the service reads one, from an import's cell or a JSON field (weld_private.json_date):
-- YYYY-MM-DD, a day that exists (no 2026-02-30), from 1900-01-01 to 2200-12-31; null otherwise.
-- Judged by its parts, each arm only when the ones before hold, so that no cast can fail: one
-- expression on every PostgreSQL the service supports (15 has no pg_input_is_valid).
create or replace function weld_hidden.import_date(value text) returns date
  language sql stable parallel safe
as $$
  select case
           when value !~ '^[0-9]{4}-[0-9]{2}-[0-9]{2}$' then null
           when substr(value, 1, 4)::int not between 1900 and 2200
             or substr(value, 6, 2)::int not between 1 and 12 then null
           -- The month's last day: its first day, plus a month, less a day.
           when substr(value, 9, 2)::int not between 1 and extract(
                  day from make_date(substr(value, 1, 4)::int, substr(value, 6, 2)::int, 1)
                           + interval '1 month - 1 day')::int then null
           else value::date
         end
$$;

grant execute on function weld_hidden.import_date(text) to weld_engineer, weld_rules;
--! EndIncluded functions/weld_hidden.import_date.sql
--! Included functions/weld_private.json_date.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_private to weld_rules;
set role weld_rules;

-- The functions that read dates from JSON (record_ndt, record_inspection and their corrections)
-- say the same, with a pointer to the field.
create or replace function weld_private.json_date(input jsonb, key text, pointer text) returns date
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
declare
  value jsonb := input -> key;
begin
  if value is null then
    return null;
  end if;
  if jsonb_typeof(value) <> 'string' or weld_hidden.import_date(value #>> '{}') is null then
    perform weld_private.invalid_input(
      format('%s must be a date, YYYY-MM-DD, from 1900-01-01 to 2200-12-31', key),
      weld_private.json_pointer(pointer, key));
  end if;
  return (value #>> '{}')::date;
end
$$;

reset role;
revoke create on schema weld_private from weld_rules;
--! EndIncluded functions/weld_private.json_date.sql
