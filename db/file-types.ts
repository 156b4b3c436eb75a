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

/** What an image will take to draw: its pixels, and the bytes a decoder holds for each. */
export interface ImageSize {
  width: number;
  height: number;
  /** Decoded: 4 for 8-bit colour with alpha, 8 for 16-bit. */
  bytesPerPixel: number;
}

/**
 * An image's size, read from its headers without decoding it, or why it cannot be judged (and is
 * not taken). A few hundred compressed kilobytes can unpack to gigabytes, so every header that
 * sets a size is read, as a decoder would:
 *
 *   PNG   every chunk is walked: exactly one IHDR, first; an animated PNG (acTL) is refused (its
 *         frames are each decoded at the canvas's size)
 *   JPEG  the segments up to the image data (SOS), fill bytes skipped as decoders skip them:
 *         exactly one frame header (SOF), with a height (0 means "given later", refused)
 */
export function imageSize(bytes: Uint8Array): ImageSize | { problem: string } {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const type = sniffAttachment(bytes);
  if (type === 'image/png') {
    let size: ImageSize | undefined;
    for (let at = 8; at + 8 <= bytes.length;) {
      const length = view.getUint32(at);
      const name = String.fromCharCode(...bytes.subarray(at + 4, at + 8));
      if (name === 'IHDR') {
        if (size || at !== 8 || at + 21 > bytes.length)
          return { problem: 'its header is not one IHDR, first' };
        const depth = bytes[at + 16]!;
        size = {
          width: view.getUint32(at + 8),
          height: view.getUint32(at + 12),
          bytesPerPixel: depth === 16 ? 8 : 4,
        };
      } else if (name === 'acTL' || name === 'fcTL' || name === 'fdAT') {
        return { problem: 'it is an animated PNG' };
      } else if (name === 'IEND') break;
      at += 12 + length;
    }
    return size ?? { problem: 'it has no IHDR' };
  }
  if (type === 'image/jpeg') {
    let size: ImageSize | undefined;
    let at = 2;
    while (at < bytes.length) {
      if (bytes[at] !== 0xff) return { problem: 'its segments are broken' };
      while (bytes[at] === 0xff) at++; // fill bytes
      const marker = bytes[at]!;
      at++;
      if ((marker >= 0xd0 && marker <= 0xd7) || marker === 0x01) continue; // no length
      if (marker === 0xd9 || marker === 0xda) break; // end of image, start of scan
      if (at + 2 > bytes.length) break;
      const length = view.getUint16(at);
      if (length < 2) return { problem: 'its segments are broken' };
      if (marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4) {
        if (marker === 0xc8 || marker === 0xcc || size || at + 7 > bytes.length) {
          return { problem: 'its frame header is not one SOF' };
        }
        size = { width: view.getUint16(at + 5), height: view.getUint16(at + 3), bytesPerPixel: 4 };
        if (size.height === 0 || size.width === 0)
          return { problem: 'its frame header gives no size' };
      }
      at += length;
    }
    return size ?? { problem: 'it has no frame header before its image data' };
  }
  return { problem: 'it is not a PNG or a JPEG' };
}
