--! Previous: sha1:65095ef61c2f16e3b842a33aa893c94c8b31333f
--! Hash: sha1:ce29e3ed8b306f006fd2bb08564495b0f3711167
--! Message: GraphQL aggregates on NDT results, inspection welds, histories

-- Issue F17 part 2: an analyst counts NDT results per weld or welder, and status changes per
-- status, on the server. PostGraphile reads the tag first in the comment.
comment on table weld_public.ndt_record_welds is
  E'@aggregates on\nThe welds an NDT record covers.';
comment on table weld_public.inspection_welds is
  E'@aggregates on\nThe welds an inspection covers.';
comment on table weld_public.weld_status_history is
  E'@aggregates on\nEvery change of a weld''s status: who, when, from, to, why, and what caused it.';
comment on table weld_public.examination_changes is
  E'@aggregates on\nEvery change to an NDT record or inspection after it was created: what, before and after, who and when.';
-- Columns an analyst groups by, though not indexed: pg-aggregates groups by the columns that can
-- be ordered, the indexed ones unless a column says otherwise.
comment on column weld_public.ndt_record_welds.result is
  E'@behavior +orderBy +attribute:groupBy\nThe result the examiner gave this weld; null: derived from the film intervals that show it (RT only), rejected when any is.';
comment on column weld_public.weld_status_history.from_status is
  E'@behavior +orderBy +attribute:groupBy\nThe status before the change.';
comment on column weld_public.weld_status_history.to_status is
  E'@behavior +orderBy +attribute:groupBy\nThe status after the change.';
comment on column weld_public.weld_status_history.cause is
  E'@behavior +orderBy +attribute:groupBy\nWhat made the change: a user, an NDT record''s result, or the system.';
