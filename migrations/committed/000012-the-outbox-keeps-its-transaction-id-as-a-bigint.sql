--! Previous: sha1:8ee33866d73a7820cb3980427d8f09da17cbc168
--! Hash: sha1:f1143f57d7c7de5f43511578e5f4c1e959d5e57d
--! Message: The outbox keeps its transaction id as a bigint

-- The outbox keeps its writing transaction's id as a bigint, not as xid8: PostGraphile has no
-- codec for xid8 and warned about the column at every start (it is hidden from GraphQL anyway).
-- xid8 values are 64-bit and below 2^63 for any cluster that will ever run, so the text form
-- fits a bigint exactly; the comparison with the current transaction casts the same way.

alter table weld_public.events alter column xid drop default;
alter table weld_public.events
  alter column xid type bigint using xid::text::bigint;
alter table weld_public.events
  alter column xid set default pg_current_xact_id()::text::bigint;

create or replace function weld_private.transaction_event(tenant uuid, kind text, subject uuid)
  returns table (id bigint, type text)
  language sql stable
as $$
  select e.id, e.type
    from weld_public.events e
   where e.tenant_id = tenant and e.subject_id = subject
     and e.id >= coalesce(nullif(current_setting('weld.first_event_id', true), '')::bigint, 0)
     and e.xid = pg_current_xact_id()::text::bigint
     and e.type like kind || '.%'
$$;
