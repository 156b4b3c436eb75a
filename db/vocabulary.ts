// The words the database and the TypeScript layers share, each spelled once. Every list mirrors a
// SQL enum, CHECK constraint or role of the migrations; test/db/vocabulary.test.ts reads the
// catalog and fails when the two drift apart.

/** The database roles a request runs as, least privileged first; each includes the ones before. */
export const REQUEST_ROLES = [
  'weld_anonymous',
  'weld_viewer',
  'weld_inspector',
  'weld_engineer',
  'weld_admin',
] as const;
export type RequestRole = (typeof REQUEST_ROLES)[number];

/** A user's role (SQL enum weld_public.user_role), least first. */
export const USER_ROLES = ['viewer', 'inspector', 'engineer', 'admin'] as const;
export type UserRole = (typeof USER_ROLES)[number];

/** The request role a signed-in user's transactions run as. */
export const requestRoleOf = (role: UserRole): RequestRole => `weld_${role}`;

/**
 * OAuth2 scopes (F18), one per area of the API, as an OAuth2 client's token carries them
 * (space-separated in its `scope` claim). The areas are SQL's: weld_hidden.require_scope and the
 * row security policies of migration 000045, which docs/api.md ("Scopes") describes.
 */
export const OAUTH_SCOPES = [
  'welds:read',
  'welds:write',
  'ndt:write',
  'packages:write',
  'imports:write',
  'events:read',
  'webhooks:write',
  'reports:read',
] as const;
export type OauthScope = (typeof OAUTH_SCOPES)[number];

/** A weld's status (SQL enum weld_public.weld_status), as the contract spells it. */
export const WELD_STATUSES = ['PENDING', 'ACCEPTED', 'REJECTED', 'REPAIR', 'VOIDED'] as const;
export type WeldStatus = (typeof WELD_STATUSES)[number];

/**
 * Weld types (CHECK on weld_public.welds.type): butt, socket, fillet, branch, tie-in, miter, lap.
 * Socket and fillet welds are the fillet welds of ASME IX; the rest are groove welds.
 */
export const WELD_TYPES = ['BW', 'SW', 'FW', 'BR', 'TW', 'MW', 'LW'] as const;

/** Fluid services of B31.3 (CHECK on weld_public.isos.fluid_service). */
export const FLUID_SERVICES = [
  'normal',
  'category_d',
  'category_m',
  'severe_cyclic',
  'high_pressure',
] as const;

/** Page sizes of every list, REST and GraphQL alike. */
export const PAGE_SIZE = { default: 50, max: 500 } as const;

/** Welding processes of ASME IX; a process field holds one or several joined by "+" (GTAW+SMAW). */
export const WELDING_PROCESSES = ['SMAW', 'GTAW', 'GMAW', 'FCAW', 'SAW', 'PAW'] as const;

/** States of a WPS (CHECK on weld_public.wps.state). */
export const WPS_STATES = ['draft', 'approved', 'superseded'] as const;

/** Welding positions a qualification covers (CHECK on welder_qualifications.positions). */
export const WELDING_POSITIONS = [
  '1G', '2G', '3G', '4G', '5G', '6G', '1F', '2F', '3F', '4F', '5F',
] as const; // prettier-ignore

/** NDT methods (CHECK on weld_public.ndt_records.method); only RT has film. */
export const NDT_METHODS = ['RT', 'UT', 'MT', 'PT', 'VT', 'PWHT', 'PMI', 'HT'] as const;

/** The result of an examination, of a weld in it, or of a film interval. */
export const EXAMINATION_RESULTS = ['accepted', 'rejected'] as const;

/** Kinds of inspection (CHECK on weld_public.inspections.kind). */
export const INSPECTION_KINDS = ['fit-up', 'visual', 'dimensional', 'final'] as const;

/** Test media and states of a test package (CHECKs on weld_public.test_packages). */
export const TEST_MEDIA = ['hydro', 'pneumatic', 'service'] as const;
export const TEST_PACKAGE_STATES = ['open', 'released', 'tested', 'closed'] as const;

/** Punch item categories (CHECK on weld_public.punch_items.category): A blocks release, B not. */
export const PUNCH_CATEGORIES = ['A', 'B'] as const;

/**
 * What an attachment may be, judged by its bytes (CHECKs on weld_public.attachments and
 * weld_hidden.attachment_files.content_type).
 */
export const ATTACHMENT_TYPES = ['application/pdf', 'image/png', 'image/jpeg', 'text/csv'] as const;

/**
 * Tiers of an examination selection (CHECK on weld_public.examination_selections.tier): the
 * random sample, then the progressive tiers a rejection of the tier before causes (B31.3 341.3.4).
 */
export const SELECTION_TIERS = ['random', 'examined', '1', '2', 'full'] as const;

/** A selection is open until an NDT record of its method covers the weld (computed, no CHECK). */
export const SELECTION_STATES = ['open', 'done'] as const;

/**
 * The designated lot (CHECK on weld_public.tenant_settings.examination_lot, B31.3 344.1.3): every
 * weld of a line for one extent (the code's), or one welder's welds of a line (stricter).
 */
export const EXAMINATION_LOTS = ['line', 'line_welder'] as const;

/**
 * The editions of ASME B31.3 a tenant may build to (CHECK on tenant_settings.code_edition and on
 * the rule tables' edition): the preheat, heat treatment and exemption rows of one apply.
 */
export const CODE_EDITIONS = ['B31.3-2022', 'B31.3-2012'] as const;

/** How a PWHT cycle heated the welds (CHECK on weld_public.pwht_records.heating). */
export const PWHT_HEATINGS = ['furnace', 'local'] as const;

/** What the weld checks do (CHECK on weld_public.tenant_settings.weld_checks): show, or refuse writes. */
export const WELD_CHECK_MODES = ['show', 'refuse'] as const;

/** Dimensions of the qualification range rules (CHECK on qualification_range_rules.dimension). */
export const QUALIFICATION_RANGE_DIMENSIONS = ['diameter', 'thickness'] as const;

/** States of a welder qualification on a date (computed by welders_qualification_status). */
export const QUALIFICATION_STATES = [
  'valid',
  'expired',
  'lapsed',
  'revoked',
  'not_yet_valid',
] as const;

/** What a welder qualification covers (CHECK on welder_qualifications.joint, ASME IX QW-303). */
export const QUALIFICATION_JOINTS = ['groove', 'fillet'] as const;

/** What a component is (CHECK on components.kind). */
export const COMPONENT_KINDS = ['pipe', 'fitting', 'flange', 'valve'] as const;

/** Where a hardness reading was taken (CHECK on hardness_readings.location). */
export const HARDNESS_LOCATIONS = ['weld', 'haz', 'base'] as const;

/** Where a use in a welder's continuity log comes from (welders_continuity). */
export const CONTINUITY_SOURCES = ['weld', 'repair', 'document'] as const;

/** The dates every date column allows (CHECK *_calendar in the migrations). */
export const CALENDAR = { first: '1900-01-01', last: '2200-12-31' } as const;

/** Codes of the weld checks (weld_public.welds_checks), in the order the SQL sorts them. */
export const WELD_CHECK_CODES = [
  'DATA_MISSING',
  'FILLER_NOT_COVERED',
  'HARDNESS_HIGH',
  'HARDNESS_REQUIRED',
  'PREHEAT_LOW',
  'PWHT_OUT_OF_RANGE',
  'PWHT_REQUIRED',
  'REEXAMINATION_OPEN',
  'WELDER_NOT_QUALIFIED',
  'WPS_NOT_APPROVED',
  'WPS_PNUMBER',
  'WPS_RANGE',
  'WPS_RANGE_UNSUPPORTED',
] as const;

/** Why a test package is not ready (weld_public.test_packages_readiness_reasons). */
export const READINESS_CODES = [
  'NO_WELDS',
  'WELD_NOT_ACCEPTED',
  'EXAMINATION_SHORTFALL',
  'EXAMINATION_OPEN',
  'PROGRESSIVE_OPEN',
  ...WELD_CHECK_CODES,
  'PUNCH_A_OPEN',
] as const;

/**
 * The event types of the outbox (migration 000010, weld_private.tg__outbox): each resource's
 * created/updated/deleted, and the changes that matter on their own.
 */
export const EVENT_RESOURCES = [
  'iso',
  'weld',
  'welder',
  'pqr',
  'wps',
  'welder_qualification',
  'ndt_record',
  'inspection',
  'test_package',
  'pwht_record',
  'hardness_reading',
  'component',
  'filler_lot',
  'weld_filler',
  'punch_item',
  'attachment',
  'weld_repair',
] as const;
export const EVENT_TYPES = [
  ...EVENT_RESOURCES.flatMap((kind) => [`${kind}.created`, `${kind}.updated`, `${kind}.deleted`]),
  'weld.status_changed',
  'test_package.released',
  'examination_selection.opened',
  'examination_selection.closed',
  'examination_selection.reopened',
  // An endpoint paused with its author (migrations/current.sql, F14); not a resource's change.
  'webhook.paused',
  // Welder alerts, from the daily tick (weld_hidden.send_welder_alerts, F19).
  'qualification.lapsing',
  'qualification.lapsed',
  'welder.repair_rate_exceeded',
] as const;
export type EventType = (typeof EVENT_TYPES)[number];

/** Events per page of GET /events (a feed reader catches up in big pages). */
export const EVENT_PAGE_SIZE = { default: 100, max: 1000 } as const;
