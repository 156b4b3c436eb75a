// The turnover dossier laid out off the request thread (rest-adapter/dossier.ts starts this file
// as a worker thread): hundreds of pages, and attached reports and images to parse, are seconds
// of CPU and much memory that a request must not take from every other one. A worker has a heap
// of its own with a limit, and is stopped when it takes too long.
import { parentPort, workerData } from 'node:worker_threads';
import { dossierZip, renderDossierPdf, type DossierData } from './dossier.ts';

/** What the worker is given: the dossier's data with the files' bytes, and what to answer. */
export interface DossierJob {
  data: DossierData;
  /** The generation stamp, as milliseconds since the epoch. */
  generatedAt: number;
  /** The ZIP of the PDF (named pdfName) and the files, rather than the PDF alone. */
  zip: boolean;
  pdfName: string;
}

const job = workerData as DossierJob | undefined;
if (job && parentPort) {
  const generatedAt = new Date(job.generatedAt);
  const pdf = await renderDossierPdf(job.data, generatedAt);
  const body = job.zip ? dossierZip(job.pdfName, pdf, job.data.attachments, generatedAt) : pdf;
  parentPort.postMessage(body, [body.buffer as ArrayBuffer]);
}
