/* A stand-in for Windows' bcryptprimitives.dll, for `cargo xtask wine-test` only (xtask/src/wine.rs).
 *
 * Rust's std gets its random bytes from ProcessPrng in bcryptprimitives.dll (Windows 10 and
 * later); Wine 8.0 has no such DLL, so every Rust program fails to start under it ("Library
 * bcryptprimitives.dll ... not found"). This one answers ProcessPrng with RtlGenRandom
 * (advapi32's SystemFunction036), which Wine has. It sits next to the test binary only; nothing
 * that ships uses it. */
#include <windows.h>

BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);

__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T length)
{
    while (length > 0) {
        ULONG chunk = length > 0x10000000 ? 0x10000000 : (ULONG)length;
        if (!SystemFunction036(data, chunk))
            return FALSE;
        data += chunk;
        length -= chunk;
    }
    return TRUE;
}
