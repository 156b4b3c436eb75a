// Imported first by server/main.ts, before anything loads PostGraphile: Grafast runs in
// production mode unless GRAPHILE_ENV says otherwise (and then does not print a notice about it).
process.env.GRAPHILE_ENV ??= 'production';
