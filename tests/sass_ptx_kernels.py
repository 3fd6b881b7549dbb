"""Small PTX kernels for the SASS analysis tests, assembled for sm_90a by Triton's ptxas:
forms the corpus kernels lack (doubles, conversions, warp MMA, ldmatrix, 128-bit shared
and global accesses, atomics, reductions, votes, shuffles; calls), what PTX written into a
Triton kernel (tl.inline_asm_elementwise) can add (matches, packs, video and half
functions, barrier reductions, bulk copies, movmatrix, memory orders, ...), and a kernel
small enough to check its liveness by hand."""
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

# What inline PTX may bring that Triton itself does not write.
MORE_FORMS = r""".version 8.7
.target sm_90a
.address_size 64

.visible .entry more_forms(.param .u64 out, .param .u64 in, .param .u32 n)
{
    .reg .pred %p<8>;
    .reg .b32 %r<80>;
    .reg .b64 %rd<20>;
    .reg .f32 %f<20>;
    .reg .b16 %h<8>;
    .shared .align 16 .b8 smem[4096];
    .shared .align 8 .b64 bar0;

    ld.param.u64 %rd1, [out];
    ld.param.u64 %rd2, [in];
    ld.param.u32 %r1, [n];
    mov.u32 %r2, %tid.x;
    mul.wide.u32 %rd3, %r2, 16;
    add.s64 %rd4, %rd2, %rd3;
    ld.global.nc.L1::no_allocate.v4.u32 {%r3, %r4, %r5, %r6}, [%rd4];
    ld.global.acquire.gpu.u32 %r7, [%rd2];
    ld.volatile.global.u32 %r8, [%rd2+4];
    match.any.sync.b32 %r9, %r3, 0xffffffff;
    match.all.sync.b32 %r10|%p1, %r4, 0xffffffff;
    activemask.b32 %r11;
    bmsk.wrap.b32 %r12, %r5, %r6;
    szext.clamp.s32 %r13, %r3, %r4;
    cvt.pack.sat.s16.s32 %r14, %r3, %r4;
    cvt.pack.sat.u8.s32.b32 %r15, %r5, %r6, %r14;
    vabsdiff4.u32.u32.u32.add %r16, %r3, %r4, %r5;
    dp2a.lo.s32.s32 %r17, %r3, %r4, %r5;
    bfe.u32 %r18, %r3, 3, 5;
    bfi.b32 %r19, %r4, %r5, 7, 9;
    fns.b32 %r20, %r3, %r2, 3;
    prmt.b32.f4e %r21, %r3, %r4, %r5;
    mov.b32 %f1, %r3;
    tanh.approx.f32 %f2, %f1;
    sin.approx.f32 %f3, %f1;
    cos.approx.f32 %f4, %f1;
    ex2.approx.ftz.f32 %f5, %f1;
    set.lt.u32.f32 %r22, %f2, %f3;
    mov.b32 {%h1, %h2}, %r4;
    ex2.approx.f16x2 %r23, %r4;
    tanh.approx.f16x2 %r24, %r5;
    set.gt.u32.f16x2 %r25, %r4, %r5;
    fma.rn.relu.f16x2 %r26, %r4, %r5, %r6;
    min.xorsign.abs.f32 %f6, %f4, %f5;
    copysign.f32 %f7, %f6, %f2;
    testp.finite.f32 %p2, %f7;
    isspacep.shared %p3, %rd2;
    mov.u32 %r27, smem;
    shl.b32 %r28, %r2, 2;
    add.u32 %r29, %r27, %r28;
    atom.shared.cas.b32 %r30, [%r29], %r3, %r4;
    atom.shared.add.f32 %f8, [%r29+256], %f7;
    atom.global.cas.b64 %rd5, [%rd1], %rd3, %rd4;
    atom.global.exch.b64 %rd6, [%rd1+8], %rd3;
    red.global.release.gpu.add.u32 [%rd1+16], %r3;
    atom.global.inc.u32 %r31, [%rd1+20], %r4;
    atom.global.add.noftz.f16x2 %r32, [%rd1+24], %r5;
    atom.global.max.u64 %rd15, [%rd1+32], %rd3;
    cvt.u32.u64 %r60, %rd15;
    mov.b32 %f9, %r60;
    fence.acq_rel.gpu;
    fence.proxy.async.shared::cta;
    bar.red.popc.u32 %r33, 0, %p2;
    bar.red.and.pred %p4, 1, %p3;
    barrier.cta.arrive 2, 64;
    mov.u32 %r34, %nsmid;
    mov.u64 %rd7, %clock64;
    mov.u32 %r35, %lanemask_lt;
    mov.u32 %r36, %warpid;
    nanosleep.u32 100;
    prefetch.global.L2 [%rd2+128];
    createpolicy.fractional.L2::evict_last.b64 %rd8, 1.0;
    ld.global.L2::cache_hint.u32 %r37, [%rd2+64], %rd8;
    mbarrier.init.shared.b64 [bar0], 1;
    mov.u32 %r38, bar0;
    cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%r27], [%rd2], 256, [%r38];
    cp.async.bulk.prefetch.L2.global [%rd2+512], 256;
    cp.async.bulk.global.shared::cta.bulk_group [%rd1+4096], [%r27+512], 256;
    cp.reduce.async.bulk.global.shared::cta.bulk_group.add.u32 [%rd1+8192], [%r27+1024], 256;
    cp.async.bulk.commit_group;
    cp.async.bulk.wait_group.read 0;
    movmatrix.sync.aligned.m8n8.trans.b16 %r39, %r3;
    stmatrix.sync.aligned.m8n8.x2.trans.shared.b16 [%r29], {%r4, %r5};
    ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16 {%r40}, [%r29];
    cvt.rn.f16x2.f32 %r41, %f2, %f3;
    cvt.rn.bf16x2.f32 %r42, %f4, %f5;
    cvt.rni.s32.f32 %r43, %f6;
    cvt.sat.f32.f32 %f10, %f7;
    mul.hi.u64 %rd9, %rd3, %rd4;
    popc.b64 %r44, %rd9;
    clz.b64 %r45, %rd9;
    brev.b64 %rd10, %rd9;
    mad.lo.cc.u32 %r46, %r3, %r4, %r5;
    madc.hi.u32 %r47, %r3, %r4, %r6;
    add.u32 %r48, %r9, %r10;
    add.u32 %r48, %r48, %r11;
    add.u32 %r48, %r48, %r12;
    add.u32 %r48, %r48, %r13;
    add.u32 %r48, %r48, %r15;
    add.u32 %r48, %r48, %r16;
    add.u32 %r48, %r48, %r17;
    add.u32 %r48, %r48, %r18;
    add.u32 %r48, %r48, %r19;
    add.u32 %r48, %r48, %r20;
    add.u32 %r48, %r48, %r21;
    add.u32 %r48, %r48, %r22;
    add.u32 %r48, %r48, %r23;
    add.u32 %r48, %r48, %r24;
    add.u32 %r48, %r48, %r25;
    add.u32 %r48, %r48, %r26;
    add.u32 %r48, %r48, %r30;
    add.u32 %r48, %r48, %r31;
    add.u32 %r48, %r48, %r32;
    add.u32 %r48, %r48, %r33;
    add.u32 %r48, %r48, %r34;
    add.u32 %r48, %r48, %r35;
    add.u32 %r48, %r48, %r36;
    add.u32 %r48, %r48, %r37;
    add.u32 %r48, %r48, %r39;
    add.u32 %r48, %r48, %r40;
    add.u32 %r48, %r48, %r41;
    add.u32 %r48, %r48, %r42;
    add.u32 %r48, %r48, %r43;
    add.u32 %r48, %r48, %r44;
    add.u32 %r48, %r48, %r45;
    add.u32 %r48, %r48, %r46;
    add.u32 %r48, %r48, %r47;
    add.u32 %r48, %r48, %r7;
    add.u32 %r48, %r48, %r8;
    add.u32 %r48, %r48, %r14;
    selp.u32 %r49, 1, 0, %p1;
    add.u32 %r48, %r48, %r49;
    selp.u32 %r49, 1, 0, %p4;
    add.u32 %r48, %r48, %r49;
    add.f32 %f11, %f2, %f3;
    add.f32 %f11, %f11, %f4;
    add.f32 %f11, %f11, %f5;
    add.f32 %f11, %f11, %f6;
    add.f32 %f11, %f11, %f8;
    add.f32 %f11, %f11, %f9;
    add.f32 %f11, %f11, %f10;
    mov.b32 %r50, %f11;
    add.u32 %r48, %r48, %r50;
    add.s64 %rd11, %rd1, %rd3;
    st.global.release.gpu.u32 [%rd11], %r48;
    add.u64 %rd12, %rd5, %rd6;
    add.u64 %rd12, %rd12, %rd7;
    add.u64 %rd12, %rd12, %rd10;
    st.global.u64 [%rd11+8], %rd12;
    @%p3 trap;
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


# Stores just before the EXIT: ptxas gives them no read scoreboard (nothing rewrites their
# sources), so no wait can tell when they have read their registers; few registers are free
# at the EXIT besides theirs.
LATE_STORES = """.version 8.0
.target sm_90a
.address_size 64

.visible .entry late_stores(.param .u64 out, .param .u64 in)
{
    .reg .b32 %r<16>;
    .reg .b64 %rd<6>;

    ld.param.u64 %rd1, [out];
    ld.param.u64 %rd2, [in];
    mov.u32 %r1, %tid.x;
    mul.wide.u32 %rd3, %r1, 128;
    add.s64 %rd4, %rd2, %rd3;
    add.s64 %rd5, %rd1, %rd3;
    ld.global.v4.u32 {%r2, %r3, %r4, %r5}, [%rd4+0];
    ld.global.v4.u32 {%r6, %r7, %r8, %r9}, [%rd4+16];
    ld.global.v4.u32 {%r10, %r11, %r12, %r13}, [%rd4+32];
    st.global.v4.u32 [%rd5+0], {%r2, %r3, %r4, %r5};
    st.global.v4.u32 [%rd5+16], {%r6, %r7, %r8, %r9};
    st.global.v4.u32 [%rd5+32], {%r10, %r11, %r12, %r13};
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
