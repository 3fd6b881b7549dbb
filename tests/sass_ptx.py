"""Small PTX kernels for the SASS decoder and inserter tests: the forms the corpus lacks
(a noinline call, a call through an absolute address, a jump table, two kernels in one
module, another architecture)."""

SMALL_PTX = """.version 8.0
.target {arch}
.address_size 64
.visible .entry small(.param .u64 out)
{{
	.reg .u64 %p;
	.reg .u32 %t;
	ld.param.u64 %p, [out];
	mov.u32 %t, %tid.x;
	st.global.u32 [%p], %t;
	ret;
}}
"""

CALL_PTX = """.version 8.0
.target sm_90a
.address_size 64
.func (.reg .u32 r) helper(.param .u32 a)
{
	.reg .u32 %t;
	ld.param.u32 %t, [a];
	mul.lo.u32 %t, %t, 3;
	st.param.u32 [r], %t;
	ret;
}
.visible .entry calls(.param .u64 out, .param .u32 n)
{
	.reg .u32 %i, %n, %v;
	.reg .u64 %p;
	.reg .pred %q;
	ld.param.u64 %p, [out];
	ld.param.u32 %n, [n];
	mov.u32 %i, %tid.x;
LOOP:
	{
	.param .u32 a0;
	.param .u32 r0;
	st.param.u32 [a0], %i;
	call.uni (r0), helper, (a0);
	ld.param.u32 %v, [r0];
	}
	add.u32 %i, %i, %v;
	setp.lt.u32 %q, %i, %n;
	@%q bra LOOP;
	st.global.u32 [%p], %i;
	ret;
}
"""

# A call of vprintf, which ptxas makes through an absolute address in a register.
ABSOLUTE_CALL_PTX = """.version 8.0
.target sm_90a
.address_size 64
.extern .func (.param .b32 r) vprintf(.param .b64 f, .param .b64 a);
.global .align 1 .b8 fmt[4] = {37, 100, 10, 0};
.visible .entry printing(.param .u64 out)
{
	.reg .b64 %f, %a;
	.reg .b32 %r;
	mov.u64 %f, fmt;
	cvta.global.u64 %f, %f;
	mov.u64 %a, 0;
	{
	.param .b64 p0;
	st.param.b64 [p0], %f;
	.param .b64 p1;
	st.param.b64 [p1], %a;
	.param .b32 r0;
	call.uni (r0), vprintf, (p0, p1);
	ld.param.b32 %r, [r0];
	}
	ret;
}
"""

BRX_PTX = """.version 8.0
.target sm_90a
.address_size 64
.visible .entry table(.param .u64 out, .param .u32 n)
{
	.reg .u32 %i, %v;
	.reg .u64 %p;
	ld.param.u64 %p, [out];
	ld.param.u32 %i, [n];
	and.b32 %i, %i, 3;
	ts: .branchtargets L0, L1, L2, L3;
	brx.idx %i, ts;
L0:	mov.u32 %v, 10; bra.uni W;
L1:	mov.u32 %v, 20; bra.uni W;
L2:	mov.u32 %v, 30; bra.uni W;
L3:	mov.u32 %v, 40; bra.uni W;
W:	st.global.u32 [%p], %v;
	ret;
}
"""

TWO_KERNELS_PTX = """.version 8.0
.target sm_90a
.address_size 64
.visible .entry first(.param .u64 out)
{
	.reg .u64 %p;
	.reg .u32 %t;
	.reg .pred %q;
	ld.param.u64 %p, [out];
	mov.u32 %t, %tid.x;
	setp.eq.u32 %q, %t, 0;
	@%q bra DONE;
	st.global.u32 [%p], %t;
DONE:
	ret;
}
.visible .entry second(.param .u64 out)
{
	.reg .u64 %p;
	.reg .u32 %t;
	ld.param.u64 %p, [out];
	mov.u32 %t, %ctaid.x;
	st.global.u32 [%p+4], %t;
	ret;
}
"""
