// A text view that draws only the rows on screen: a 9 MB output is as quick to show and to
// scroll as a short one. The worker wraps the text into rows (each row's start offset) for the
// view's width, with every credential's range, found by the core's own rule, standing as one
// placeholder that is never cut; this view draws rows, hiding those ranges until revealed.
'use strict';

/* exported TextView */
class TextView {
  /** `el` is the focusable scroll container (a tab panel). */
  constructor(el, placeholder) {
    this.el = el;
    this.placeholder = placeholder;
    this.spacer = document.createElement('div');
    this.spacer.className = 'spacer';
    this.rows = document.createElement('div');
    this.rows.className = 'rows';
    this.spacer.append(this.rows);
    this.empty = document.createElement('p');
    this.empty.className = 'empty';
    el.append(this.spacer, this.empty);
    this.doc = null;
    this.revealed = false;
    this.drawn = '';
    el.addEventListener('scroll', () => this.schedule());
  }

  /** Every text panel shares one row height and character width, measured once shown. */
  static metrics() {
    if (TextView.measured) return TextView.measured;
    const probe = document.createElement('div');
    probe.className = 'row probe';
    probe.textContent = '0'.repeat(40);
    document.body.append(probe);
    const box = probe.getBoundingClientRect();
    probe.remove();
    if (!box.height) return { row: 18, char: 7.8 };
    TextView.measured = { row: box.height, char: box.width / 40 };
    return TextView.measured;
  }

  /** How many characters fit on a row of this view. */
  width() {
    const style = getComputedStyle(this.el);
    const px = (v) => parseFloat(v) || 0;
    const frame = px(style.paddingLeft) + px(style.paddingRight);
    let inner = this.el.clientWidth - frame;
    if (!this.el.clientWidth) {
      // A hidden panel has no size: it would be as wide as its pane's content, less its
      // border and room for a scroll bar.
      const pane = getComputedStyle(this.el.parentElement);
      inner = this.el.parentElement.clientWidth - px(pane.paddingLeft) - px(pane.paddingRight)
        - frame - px(style.borderLeftWidth) - px(style.borderRightWidth) - 16;
    }
    return Math.max(20, Math.floor(inner / TextView.metrics().char));
  }

  /** Shows `doc` ({ text, masks, rows: { masked, revealed } }), or `empty` when it has no text. */
  show(doc, empty) {
    // The same place stays on screen when an answer replaces the last (typing in the input).
    const top = this.topOffset();
    this.doc = doc;
    this.empty.textContent = doc.text ? '' : empty;
    this.empty.hidden = Boolean(doc.text);
    this.drawn = '';
    this.scrollToOffset(top);
    this.render();
  }

  /** New rows for the same text (another width). */
  rewrap(rows) {
    if (!this.doc) return;
    const top = this.topOffset();
    this.doc.rows = rows;
    this.drawn = '';
    this.scrollToOffset(top);
    this.render();
  }

  reveal(revealed) {
    if (this.revealed === revealed) return;
    const top = this.topOffset();
    this.revealed = revealed;
    this.drawn = '';
    this.scrollToOffset(top);
    this.render();
  }

  starts() {
    if (!this.doc || !this.doc.text) return new Uint32Array(0);
    return this.revealed ? this.doc.rows.revealed : this.doc.rows.masked;
  }

  // The text offset of the first row on screen, to keep it there when the rows change.
  topOffset() {
    const starts = this.starts();
    const row = Math.floor(this.el.scrollTop / TextView.metrics().row);
    return starts.length ? starts[Math.min(row, starts.length - 1)] : 0;
  }

  scrollToOffset(offset) {
    const starts = this.starts();
    let lo = 0;
    let hi = starts.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (starts[mid] <= offset) lo = mid + 1; else hi = mid;
    }
    this.spacer.style.height = `${starts.length * TextView.metrics().row}px`;
    this.el.scrollTop = Math.max(0, lo - 1) * TextView.metrics().row;
  }

  schedule() {
    if (this.frame) return;
    this.frame = requestAnimationFrame(() => {
      this.frame = 0;
      this.render();
    });
  }

  render() {
    const starts = this.starts();
    const { row } = TextView.metrics();
    const total = starts.length;
    // Short texts are drawn whole (find in page and selection work on all of them).
    const whole = total <= TextView.WHOLE;
    const first = whole ? 0 : Math.max(0, Math.floor(this.el.scrollTop / row) - TextView.OVERSCAN);
    const last = whole ? total : Math.min(total, Math.ceil((this.el.scrollTop + this.el.clientHeight) / row) + TextView.OVERSCAN);
    const key = `${first}:${last}:${this.revealed}`;
    if (key === this.drawn) return;
    this.drawn = key;
    this.spacer.style.height = `${total * row}px`;
    this.rows.style.top = `${first * row}px`;
    const frag = document.createDocumentFragment();
    for (let i = first; i < last; i++) frag.append(this.row(starts, i));
    this.rows.replaceChildren(frag);
  }

  /** Row `i`: its text, each hidden range as the placeholder (or marked, when revealed). */
  row(starts, i) {
    const { text, masks } = this.doc;
    const start = starts[i];
    let end = i + 1 < starts.length ? starts[i + 1] : text.length;
    if (text.charCodeAt(end - 1) === 10) end -= 1;
    if (end > start && text.charCodeAt(end - 1) === 13) end -= 1;
    const div = document.createElement('div');
    div.className = 'row';
    div.dataset.row = String(i);
    // A finding's comment line (validate mode) stands out, on each row it wraps onto.
    const line = text.lastIndexOf('\n', start - 1) + 1;
    const note = /^# (error|warning|info|validated)\b/.exec(text.slice(line, line + 12));
    if (note) div.classList.add(`note-${note[1]}`);
    // The first hidden range that ends after this row's start.
    let lo = 0;
    let hi = masks.length >> 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (masks[2 * mid + 1] <= start) lo = mid + 1; else hi = mid;
    }
    let at = start;
    for (let k = lo; k < masks.length >> 1 && masks[2 * k] < end; k++) {
      const from = Math.max(masks[2 * k], start);
      const to = Math.min(masks[2 * k + 1], end);
      if (from > at) div.append(text.slice(at, from));
      const span = document.createElement('span');
      if (this.revealed) {
        span.className = 'revealed';
        span.textContent = text.slice(from, to);
      } else {
        span.className = 'masked';
        span.textContent = masks[2 * k] >= start ? this.placeholder : '';
      }
      div.append(span);
      at = Math.max(at, this.revealed ? to : masks[2 * k + 1]);
    }
    if (end > at) div.append(text.slice(at, end));
    return div;
  }
}
TextView.WHOLE = 3000;
TextView.OVERSCAN = 30;
