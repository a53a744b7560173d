#!/bin/sh
# device/run.sh CORE - builds the device example for one core, runs it under qemu, checks it
# and prints its figures. CORE: m4 (Cortex-M4F, hard float), m0 (Cortex-M0, soft float),
# rv32imac (soft float), rv32imafc (hard float). make device writes what it includes into
# $BUILD/device (expect.h, model_f32.h, model_int8.h) and calls it once per core.
set -eu
core=$1
build=${BUILD:-build}
out=$build/device/$core
mkdir -p "$out"
CFLAGS="-Os -std=c99 -Wall -Wextra -Werror -ffunction-sections -fdata-sections -fstack-usage -DNCF_INFERENCE_ONLY -DNCF_NO_STDIO -I. -I$build/device"

# the toolchain, the core's flags, how to link and how to run
case $core in
m4 | m0)
    cc=arm-none-eabi-gcc
    if [ "$core" = m4 ]; then arch="-mthumb -mcpu=cortex-m4 -mfloat-abi=hard -mfpu=fpv4-sp-d16" board=mps2-an386
    else arch="-mthumb -mcpu=cortex-m0 -mfloat-abi=soft" board=mps2-an385; fi # (qemu runs M0 code on its M3)
    sources="device/startup.c device/main.c device/ncf_impl.c"
    link="--specs=nano.specs --specs=rdimon.specs -T device/mps2.ld"
    run="qemu-system-arm -M $board"
    doubles='__aeabi_d\|__adddf3\|__muldf3' ;;
rv32imac | rv32imafc)
    cc=riscv64-unknown-elf-gcc
    if [ "$core" = rv32imac ]; then arch="-march=rv32imac -mabi=ilp32"
    else arch="-march=rv32imafc -mabi=ilp32f"; fi
    # picolibc: its semihosting crt0 (stack, .data, .bss, then main and exit), its printf
    # without floats; the qemu virt board's RAM at 0x80000000 as 4 MB of "flash" and 4 MB of RAM
    arch="$arch --specs=picolibc.specs -DPICOLIBC_INTEGER_PRINTF_SCANF"
    sources="device/main.c device/ncf_impl.c"
    link="--oslib=semihost --crt0=semihost -Wl,--defsym=__flash=0x80000000 -Wl,--defsym=__flash_size=0x400000"
    link="$link -Wl,--defsym=__ram=0x80400000 -Wl,--defsym=__ram_size=0x400000 -Wl,--defsym=__stack_size=0x8000"
    run="qemu-system-riscv32 -M virt -bios none"
    doubles='__adddf3\|__muldf3\|__divdf3' ;;
*)
    echo "device/run.sh: unknown core '$core' (m4, m0, rv32imac, rv32imafc)" >&2
    exit 2 ;;
esac

objs=""
for f in $sources; do
    o=$out/$(basename "$f" .c).o
    $cc $arch $CFLAGS -c "$f" -o "$o"
    objs="$objs $o"
done
$cc $arch $link -Wl,--gc-sections -Wl,-Map="$out/map.txt" $objs -o "$out/device.elf" -lm

echo "== $core on $run"
timeout 600 $run -nographic -semihosting-config enable=on,target=native -icount shift=0 -kernel "$out/device.elf" 2>&1 |
    tee "$out/run.log"
grep -q 'ALL OK' "$out/run.log" || { echo "device run on $core FAILED"; exit 1; }
if ${cc%gcc}nm "$out/device.elf" | grep -q "$doubles"; then echo "double-precision math linked"; exit 1; fi
# bare metal: no thread-local storage by default (a startup that sets none up faults on it)
if ${cc%gcc}readelf -S "$out/ncf_impl.o" | grep -q 'tbss\|tdata'; then echo "thread-local storage in ncf.h's object"; exit 1; fi

# ncf.h's share of the program, from the link map: its code, constants and RAM
awk 'function hex(s, i, v) { v = 0; s = tolower(s); sub(/^0x/, "", s);
       for (i = 1; i <= length(s); i++) v = v * 16 + index("0123456789abcdef", substr(s, i, 1)) - 1; return v }
     /^Linker script and memory map/ { on = 1 } !on { next }
     /^ \.[^ ]+$/ { sec = $1; next }
     { s = sec; if ($1 ~ /^\./) { s = $1; $1 = ""; $0 = $0 }
       if (NF == 3 && $1 ~ /^0x/ && $3 ~ /ncf_impl\.o$/) {
         if (s ~ /^\.text/) t += hex($2); else if (s ~ /^\.s?rodata/) r += hex($2);
         else if (s ~ /^\.s?(bss|data)/) b += hex($2) } }
     END { printf "ncf.h linked: %d bytes of code, %d of constants (1024 of them the CRC table), %d of RAM\n", t, r, b }' \
    "$out/map.txt" | tee "$out/linked.txt"
${cc%gcc}size "$out/device.elf" | awk 'NR == 2 { printf "whole program: %d bytes of flash (the models included), %d of static RAM (a 32 KB workspace buffer included)\n", $1 + $2, $2 + $3 }'
printf 'largest stack frames in ncf.h (-fstack-usage):'
sort -t'	' -k2 -n -r "$out/ncf_impl.su" | head -n 5 |
    awk -F'\t' '{ n = split($1, a, ":"); sub(/\..*/, "", a[n]); printf " %s %s", a[n], $2 } END { print "" }'
