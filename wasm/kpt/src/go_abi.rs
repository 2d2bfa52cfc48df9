//! Guest side of Go's `js/wasm` ABI, as used by kpt's Node.js WASM runtime
//! (`KPT_FN_WASM_RUNTIME=nodejs`, kpt internal/fnruntime/{nodejs,jsglue}.go).
//!
//! kpt runs `node glue.js` where glue.js = Go's wasm_exec.js + a few lines:
//! `go.run(instance); out = processResourceList(stdin); console.log(out)`.
//! We export `mem`, `run`, `resume`, `getsp`; in `run` we register a JS
//! function `processResourceList`; each call to it re-enters us via
//! `resume`, where we hand the string to `crate::process`.
//! All `unsafe` in the crate is in this file.

use core::cell::UnsafeCell;
use core::sync::atomic::{AtomicUsize, Ordering::Relaxed};

// Every import takes one i32 `sp`: the address of a frame in our memory.
// Arguments sit at sp+8, sp+16, ... (8-byte slots); results follow them.
#[link(wasm_import_module = "go")]
unsafe extern "C" {
    #[link_name = "runtime.resetMemoryDataView"]
    fn reset_memory_data_view(sp: usize);
    #[link_name = "syscall/js.finalizeRef"]
    fn finalize_ref(sp: usize); // (v ref)
    #[link_name = "syscall/js.stringVal"]
    fn string_val(sp: usize); // (ptr, len) -> ref @24
    #[link_name = "syscall/js.valueGet"]
    fn value_get(sp: usize); // (v, ptr, len) -> ref @32
    #[link_name = "syscall/js.valueSet"]
    fn value_set(sp: usize); // (v, ptr, len, x)
    #[link_name = "syscall/js.valueIndex"]
    fn value_index(sp: usize); // (v, i) -> ref @24
    #[link_name = "syscall/js.valueCall"]
    fn value_call(sp: usize); // (v, ptr, len, args, n, cap) -> ref @56, ok u8 @64
    #[link_name = "syscall/js.valuePrepareString"]
    fn value_prepare_string(sp: usize); // (v) -> Uint8Array ref @16, len @24
    #[link_name = "syscall/js.valueLoadString"]
    fn value_load_string(sp: usize); // (bytes ref, ptr, len, cap)
    #[link_name = "runtime.getRandomData"]
    fn get_random_data(sp: usize); // (ptr, len, cap): filled by crypto.getRandomValues
}

/// The argument/result frame. valueCall is the largest: slots 1..=8 (sp+8..sp+64).
/// It is a static, so it lives in the data segment, which rustc's
/// `--stack-first` layout places above the 1 MiB stack, far from the
/// 4096..12288 area where the glue writes argv before calling `run`.
#[repr(C, align(8))]
struct Frame(UnsafeCell<[u64; 9]>);

// SAFETY: wasm32-unknown-unknown (no atomics) is single-threaded, and JS
// only touches the frame during an import call we are making, so no two
// accesses ever overlap.
unsafe impl Sync for Frame {}

static FRAME: Frame = Frame(UnsafeCell::new([0; 9]));

/// Linear-memory size (pages) that the glue's cached DataView was built on.
static KNOWN_PAGES: AtomicUsize = AtomicUsize::new(0);

fn sp() -> usize {
    FRAME.0.get() as usize
}

fn put(slot: usize, v: u64) {
    debug_assert!(slot < 9);
    // SAFETY: slot < 9 stays inside FRAME; single-threaded and no reference
    // into FRAME is ever held, so this raw write aliases nothing.
    unsafe { FRAME.0.get().cast::<u64>().add(slot).write(v) }
}

fn take(slot: usize) -> u64 {
    // SAFETY: as in `put`. The import just returned, and the compiler must
    // assume it wrote FRAME: its address escaped as an integer (sp, getsp).
    unsafe { FRAME.0.get().cast::<u64>().add(slot).read() }
}

/// The glue caches `new DataView(mem.buffer)`; growing memory detaches that
/// buffer and the next import would throw. Go's runtime calls
/// resetMemoryDataView after it grows memory; we check before every import
/// (Rust's allocator may have grown memory since the last one).
fn sync_memory() {
    let pages = core::arch::wasm32::memory_size::<0>();
    if KNOWN_PAGES.swap(pages, Relaxed) != pages {
        // SAFETY: the import only replaces the glue's DataView; it reads
        // and writes none of our memory.
        unsafe { reset_memory_data_view(sp()) }
    }
}

/// Address of a slice as the glue's 8-byte slot value (an `as` cast
/// exposes the pointer's provenance to the foreign code).
fn addr<T>(p: *const T) -> u64 {
    p as usize as u64
}

const NAN_HEAD: u32 = 0x7FF8_0000;

/// A JS value as Go encodes it: a plain f64, or a NaN-boxed reference
/// (high word NAN_HEAD | type flag, low word an index in go._values).
/// Every reference the glue hands us bumps a refcount: Drop releases it.
pub struct JsRef(u64);

impl JsRef {
    const fn predefined(id: u32, type_flag: u32) -> JsRef {
        JsRef(((NAN_HEAD | type_flag) as u64) << 32 | id as u64)
    }
    pub fn null() -> JsRef {
        Self::predefined(2, 0)
    }
    pub fn global() -> JsRef {
        Self::predefined(5, 1)
    }
    /// The `Go` instance object of the glue (`go` in glue.js).
    pub fn go() -> JsRef {
        Self::predefined(6, 1)
    }
    /// Bits 0 mean `undefined`, so 0 is the predefined value id 1.
    pub fn number(x: f64) -> JsRef {
        if x == 0.0 {
            Self::predefined(1, 0)
        } else if x.is_nan() {
            Self::predefined(0, 0)
        } else {
            JsRef(x.to_bits())
        }
    }
    fn is_ref(&self) -> bool {
        (self.0 >> 32) as u32 & NAN_HEAD == NAN_HEAD
    }
    /// The number this value is, if it is one.
    pub fn as_number(&self) -> Option<f64> {
        if self.0 == Self::number(0.0).0 {
            Some(0.0)
        } else if self.is_ref() || self.0 == 0 {
            None
        } else {
            Some(f64::from_bits(self.0))
        }
    }
    pub fn is_null_or_undefined(&self) -> bool {
        self.0 == 0 || self.0 == Self::null().0
    }
}

impl Drop for JsRef {
    fn drop(&mut self) {
        // Like Go: only object/string/symbol/function refs are counted;
        // ids 0..=6 are the predefined values (refcount Infinity).
        if self.is_ref() && (self.0 >> 32) & 7 != 0 && self.0 as u32 > 6 {
            sync_memory();
            put(1, self.0);
            // SAFETY: the glue reads the id at sp+8 and decrements a JS-side
            // refcount; it writes none of our memory.
            unsafe { finalize_ref(sp()) }
        }
    }
}

pub fn get(v: &JsRef, prop: &str) -> JsRef {
    sync_memory();
    put(1, v.0);
    put(2, addr(prop.as_ptr()));
    put(3, prop.len() as u64);
    // SAFETY: the glue reads prop's bytes (alive: borrowed for this call)
    // and writes the result into slot 4 of FRAME (re-read through getsp).
    unsafe { value_get(sp()) }
    JsRef(take(4))
}

pub fn set(v: &JsRef, prop: &str, x: &JsRef) {
    sync_memory();
    put(1, v.0);
    put(2, addr(prop.as_ptr()));
    put(3, prop.len() as u64);
    put(4, x.0);
    // SAFETY: the glue only reads the frame and prop's borrowed bytes.
    unsafe { value_set(sp()) }
}

pub fn index(v: &JsRef, i: i64) -> JsRef {
    sync_memory();
    put(1, v.0);
    put(2, i as u64);
    // SAFETY: the glue reads slots 1-2 and writes the result into slot 3.
    unsafe { value_index(sp()) }
    JsRef(take(3))
}

/// `v[method](...args)`; Err holds the exception the JS call threw.
pub fn call(v: &JsRef, method: &str, args: &[&JsRef]) -> Result<JsRef, JsRef> {
    let raw: Vec<u64> = args.iter().map(|a| a.0).collect(); // may grow memory
    sync_memory();
    put(1, v.0);
    put(2, addr(method.as_ptr()));
    put(3, method.len() as u64);
    put(4, addr(raw.as_ptr()));
    put(5, raw.len() as u64);
    put(6, raw.capacity() as u64);
    // SAFETY: the glue reads method's bytes and the `raw` array (both alive
    // for the call), catches JS exceptions itself, and writes the result
    // ref into slot 7 and a success byte into the low byte of slot 8.
    unsafe { value_call(sp()) }
    let (result, ok) = (JsRef(take(7)), take(8) as u8 == 1);
    if ok { Ok(result) } else { Err(result) }
}

/// `String(v)`, copied into Rust as UTF-8.
pub fn to_string(v: &JsRef) -> String {
    sync_memory();
    put(1, v.0);
    // SAFETY: the glue encodes String(v) as a Uint8Array (kept JS-side) and
    // writes its ref into slot 2 and its byte length into slot 3.
    unsafe { value_prepare_string(sp()) }
    let (bytes, len) = (JsRef(take(2)), take(3) as usize);
    let mut buf: Vec<u8> = Vec::with_capacity(len); // may grow memory
    sync_memory();
    put(1, bytes.0);
    put(2, addr(buf.as_ptr()));
    put(3, len as u64);
    put(4, len as u64);
    // SAFETY: the glue copies exactly `len` bytes into buf[0..len], which is
    // allocated (capacity >= len) and not otherwise borrowed; after that
    // the first `len` bytes are initialised, so set_len(len) is valid.
    unsafe {
        value_load_string(sp());
        buf.set_len(len);
    }
    drop(bytes);
    String::from_utf8(buf).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// A JS string with the contents of `s`.
pub fn from_str(s: &str) -> JsRef {
    sync_memory();
    put(1, addr(s.as_ptr()));
    put(2, s.len() as u64);
    // SAFETY: the glue decodes s's borrowed bytes and writes a ref to slot 3.
    unsafe { string_val(sp()) }
    JsRef(take(3))
}

/// Make node exit with `code` once the glue has printed our output
/// (`process.exitCode = code`). The only way to fail a kpt run: the glue
/// itself has no notion of an exit code.
pub fn set_exit_code(code: i32) {
    let process = get(&JsRef::global(), "process");
    set(&process, "exitCode", &JsRef::number(code as f64));
}

/// 32 bytes of the host's randomness: the glue's `runtime.getRandomData`, which Go's own
/// runtime seeds itself with (Web Crypto's `getRandomValues`), handed to the core for sealing.
pub fn random_bytes() -> [u8; 32] {
    let mut bytes = [0u8; 32];
    sync_memory();
    put(1, addr(bytes.as_mut_ptr()));
    put(2, bytes.len() as u64);
    put(3, bytes.len() as u64);
    // SAFETY: the frame holds a slice of `bytes` (pointer, length, capacity), which lives and
    // is not otherwise borrowed for the call; the glue writes exactly its 32 bytes.
    unsafe { get_random_data(sp()) }
    bytes
}

// ---- exports the glue calls -------------------------------------------

/// The JS-callable functions; the id travels in every event.
const PROCESS_FN_ID: f64 = 1.0;
/// `processResourceListErrors`: what kpt calls when the output was not a YAML ResourceList.
const ERRORS_FN_ID: f64 = 2.0;

/// `go.run(instance)` calls this once, synchronously, right after
/// instantiation. It must return (without runtime.wasmExit): the glue then
/// calls `processResourceList`, which throws if the program has exited.
#[unsafe(no_mangle)]
pub extern "C" fn run(_argc: i32, _argv: i32) {
    for (id, name) in [
        (PROCESS_FN_ID, "processResourceList"),
        (ERRORS_FN_ID, "processResourceListErrors"),
    ] {
        let id = JsRef::number(id);
        let Ok(func) = call(&JsRef::go(), "_makeFuncWrapper", &[&id]) else {
            panic!("_makeFuncWrapper failed"); // traps (panic=abort)
        };
        set(&JsRef::global(), name, &func);
    }
}

/// Called (through `go._resume()`) each time JS calls a wrapper made by
/// `_makeFuncWrapper`: the call is waiting in `go._pendingEvent` as
/// `{id, this, args}`, and the wrapper returns whatever we put in
/// `event.result`.
#[unsafe(no_mangle)]
pub extern "C" fn resume() {
    let go = JsRef::go();
    let event = get(&go, "_pendingEvent");
    if event.is_null_or_undefined() {
        return; // nothing pending (we never schedule timers)
    }
    set(&go, "_pendingEvent", &JsRef::null());
    let input = to_string(&index(&get(&event, "args"), 0));
    if get(&event, "id").as_number() == Some(ERRORS_FN_ID) {
        set_exit_code(1);
        set(&event, "result", &from_str(&crate::process_errors(&input)));
        return;
    }
    let response = crate::process(&input, Some(random_bytes()));
    if response.failed {
        set_exit_code(1);
    }
    set(&event, "result", &from_str(&response.output));
}

/// The glue re-reads sp after imports that may run Go code; ours never
/// moves.
#[unsafe(no_mangle)]
pub extern "C" fn getsp() -> usize {
    sp()
}
