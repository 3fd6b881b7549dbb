"""Small PTX kernels for the SASS analysis tests, assembled for sm_90a by Triton's ptxas:
forms the corpus kernels lack (doubles, conversions, warp MMA, ldmatrix, 128-bit shared
and global accesses, atomics, reductions, votes, shuffles; calls), and a kernel small enough
to check its liveness by hand."""
import functools

from gwatch_nb import ptx
from gwatch_nb.sass.disasm import disassemble

WIDE_FORMS = r""".version 8.7
.target sm_90a
.address_size 64

.visible .entry wide_forms(.param .u64 out, .param .u64 in, .param .f64 x)
{
    .reg .pred %p<4>;
    .reg .b32 %r<40>;
    .reg .b64 %rd<20>;
    .reg .f64 %fd<10>;
    .reg .f32 %f<20>;
    .reg .b16 %h<8>;
    .shared .align 16 .b8 smem[4096];

    ld.param.u64 %rd1, [out];
    ld.param.u64 %rd2, [in];
    ld.param.f64 %fd1, [x];
    mov.u32 %r1, %tid.x;
    mul.wide.u32 %rd3, %r1, 16;
    add.s64 %rd4, %rd2, %rd3;
    ld.global.v4.u32 {%r2, %r3, %r4, %r5}, [%rd4];
    mov.u32 %r6, smem;
    shl.b32 %r7, %r1, 4;
    add.u32 %r8, %r6, %r7;
    st.shared.v4.u32 [%r8], {%r2, %r3, %r4, %r5};
    bar.sync 0;
    ld.shared.v4.u32 {%r9, %r10, %r11, %r12}, [%r8+16];
    ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%r13, %r14, %r15, %r16}, [%r8];
    ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%r17, %r18}, [%r8+512];
    mov.f32 %f1, 0f00000000;
    mov.f32 %f2, 0f00000000;
    mov.f32 %f3, 0f00000000;
    mov.f32 %f4, 0f00000000;
    mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%f5, %f6, %f7, %f8}, {%r13, %r14, %r15, %r16},
        {%r17, %r18}, {%f1, %f2, %f3, %f4};
    mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {%f9, %f10, %f11, %f12}, {%r9, %r10}, {%r11}, {%f5, %f6, %f7, %f8};
    cvt.f64.f32 %fd2, %f9;
    cvt.rn.f64.s32 %fd3, %r12;
    add.f64 %fd4, %fd2, %fd1;
    mul.f64 %fd5, %fd4, %fd3;
    fma.rn.f64 %fd6, %fd5, %fd1, %fd2;
    setp.gt.f64 %p1, %fd6, %fd1;
    cvt.rzi.s64.f64 %rd5, %fd6;
    cvt.rn.f32.f64 %f13, %fd5;
    vote.sync.ballot.b32 %r19, %p1, 0xffffffff;
    shfl.sync.bfly.b32 %r20, %r19, 1, 31, 0xffffffff;
    add.s32 %r21, %r20, %r16;
    mov.b32 %r22, %f13;
    add.s32 %r23, %r21, %r22;
    mov.b32 %r24, %f10;
    mov.b32 %r25, %f11;
    mov.b32 %r26, %f12;
    add.s64 %rd6, %rd1, %rd3;
    st.global.v4.u32 [%rd6], {%r23, %r24, %r25, %r26};
    st.global.u64 [%rd6+8192], %rd5;
    atom.global.add.u32 %r27, [%rd1], %r23;
    red.global.add.u64 [%rd1+8], %rd5;
    @%p1 st.global.f64 [%rd6+16384], %fd6;
    st.global.u32 [%rd6+32768], %r27;
    ret;
}
"""

# Each thread below n stores its thread index at out[tid]; the others leave at once.
GUARDED_STORE = r"""
.version 8.7
.target sm_90a
.address_size 64

.visible .entry guarded_store(.param .u64 out, .param .u32 n)
{
    .reg .pred %p<2>;
    .reg .b32 %r<4>;
    .reg .b64 %rd<4>;

    ld.param.u64 %rd1, [out];
    ld.param.u32 %r1, [n];
    mov.u32 %r2, %tid.x;
    setp.ge.u32 %p1, %r2, %r1;
    @%p1 bra DONE;
    mul.wide.u32 %rd2, %r2, 4;
    add.s64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3], %r2;
DONE:
    ret;
}
"""
# A kernel calling a recursive function, which ptxas cannot inline: CALL, RET, the ABI's
# stack frame and saved registers.
CALLS = r""".version 8.7
.target sm_90a
.address_size 64

.func (.param .b32 result) twice(.param .b32 value)
{
    .reg .pred %p<2>;
    .reg .b32 %r<5>;
    ld.param.b32 %r1, [value];
    setp.eq.u32 %p1, %r1, 0;
    mov.u32 %r4, 0;
    @%p1 bra DONE;
    sub.u32 %r2, %r1, 1;
    {
    .param .b32 arg;
    .param .b32 ret;
    st.param.b32 [arg], %r2;
    call (ret), twice, (arg);
    ld.param.b32 %r3, [ret];
    }
    add.u32 %r4, %r3, 2;
DONE:
    st.param.b32 [result], %r4;
    ret;
}

.visible .entry calls(.param .u64 out)
{
    .reg .b32 %r<4>;
    .reg .b64 %rd<4>;
    ld.param.u64 %rd1, [out];
    mov.u32 %r1, %tid.x;
    {
    .param .b32 arg;
    .param .b32 ret;
    st.param.b32 [arg], %r1;
    call (ret), twice, (arg);
    ld.param.b32 %r2, [ret];
    }
    mul.wide.u32 %rd2, %r1, 4;
    add.s64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3], %r2;
    ret;
}
"""


@functools.lru_cache(maxsize=None)
def cubin(source: str) -> bytes:
    return ptx.assemble(source)


def instructions(source: str):
    """(kernel name, its Instructions) of a one-kernel PTX module."""
    (name, listing), = disassemble(cubin(source)).items()
    return name, listing
