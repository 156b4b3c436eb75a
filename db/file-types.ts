// What a file is, judged by its bytes, never by its name or the type a client declares: the
// types an attachment may be (PDF, PNG, JPEG by their signatures; CSV as UTF-8 text that is not
// markup), and an image's size in pixels read from its header. Used by the upload
// (rest-adapter/attachments.ts) and the dossier (dossier.ts).
import type { ATTACHMENT_TYPES } from './vocabulary.ts';

export type AttachmentType = (typeof ATTACHMENT_TYPES)[number];

/** Enough of the start of a file to judge it by. */
export const SNIFF_BYTES = 1024;

const startsWith = (head: Uint8Array, signature: number[]) =>
  signature.every((byte, i) => head[i] === byte);

/**
 * The type of a file by its first bytes: PDF, PNG and JPEG by their signatures; anything else is
 * a candidate CSV (text), which `TextCheck` then reads whole. undefined: it cannot be any of them.
 */
export function sniffAttachment(head: Uint8Array): AttachmentType | undefined {
  if (startsWith(head, [0x25, 0x50, 0x44, 0x46, 0x2d])) return 'application/pdf'; // %PDF-
  if (startsWith(head, [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])) return 'image/png';
  if (startsWith(head, [0xff, 0xd8, 0xff])) return 'image/jpeg';
  return 'text/csv';
}

/**
 * Whether a candidate CSV is one, read a piece at a time: UTF-8 text without control characters
 * but tab, CR and LF, and not markup. A file whose first character (after a BOM and white space)
 * is "<" is refused: HTML, XML or SVG renamed .csv is how a script gets into a download, and no
 * register starts that way.
 */
export class TextCheck {
  private readonly decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false });
  private started = false;
  problem: string | undefined;

  push(chunk: Uint8Array, last = false): void {
    if (this.problem) return;
    let text: string;
    try {
      text = this.decoder.decode(chunk, { stream: !last });
    } catch {
      this.problem = 'it is not a PDF, PNG or JPEG, and not UTF-8 text (CSV)';
      return;
    }
    if (!this.started) {
      const first = text.trimStart();
      if (first.length > 0) {
        this.started = true;
        if (first.startsWith('<')) {
          this.problem = 'it looks like HTML or XML, which is not taken as an attachment';
          return;
        }
      }
    }
    // eslint-disable-next-line no-control-regex
    if (/[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/.test(text)) {
      this.problem = 'it holds control characters, so it is no CSV text (nor a PDF, PNG or JPEG)';
    }
  }
}

/**
 * An image's size in pixels, from its header (PNG IHDR; a JPEG's first SOF marker, found by
 * walking its segments), without decoding it; undefined when `bytes` holds no such header. A few
 * hundred kilobytes of compressed PNG can unpack to gigabytes: the size is what is judged.
 */
export function imageSize(bytes: Uint8Array): { width: number; height: number } | undefined {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const type = sniffAttachment(bytes);
  if (type === 'image/png') {
    // Signature (8), chunk length (4), "IHDR" (4), width (4), height (4), big-endian.
    if (bytes.length < 24 || String.fromCharCode(...bytes.subarray(12, 16)) !== 'IHDR') return;
    return { width: view.getUint32(16), height: view.getUint32(20) };
  }
  if (type === 'image/jpeg') {
    let at = 2;
    while (at + 9 <= bytes.length && bytes[at] === 0xff) {
      const marker = bytes[at + 1]!;
      // SOF0 to SOF15 but DHT (C4), JPG (C8) and DAC (CC): precision (1), height (2), width (2).
      if (marker >= 0xc0 && marker <= 0xcf && ![0xc4, 0xc8, 0xcc].includes(marker)) {
        return { width: view.getUint16(at + 7), height: view.getUint16(at + 5) };
      }
      at += 2 + view.getUint16(at + 2);
    }
  }
  return undefined;
}
