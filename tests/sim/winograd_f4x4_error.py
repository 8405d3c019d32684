# How much accuracy F(4x4, 3x3) would lose against F(2x2, 3x3), in fp32 (numpy: each transform and
# the channel sum rounded to float32; numpy's einsum sums pairwise, so sequential GPU sums may be
# somewhat worse). Uniform [-1, 1] inputs, 512 tiles x 8 filters, against float64. Prints the max
# element-wise error and relative L2 error of both, next to the F(2x2) test tolerance
# (tests/test_conv_winograd.cpp, winograd_tolerance) and the direct-convolution conv_tolerance.
# Evidence for deciding on an F(4x4) solver; not a test of any kernel.
import numpy as np, math
rng = np.random.default_rng(1)
f32=np.float32
BT=np.array([[4,0,-5,0,1,0],[0,-4,-4,1,1,0],[0,4,-4,-1,1,0],[0,-2,-1,2,1,0],[0,2,-1,-2,1,0],[0,4,0,-5,0,1]],dtype=np.float64)
G=np.array([[1/4,0,0],[-1/6,-1/6,-1/6],[-1/6,1/6,-1/6],[1/24,1/12,1/6],[1/24,-1/12,1/6],[0,0,1]])
AT=np.array([[1,1,1,1,1,0],[0,1,-1,2,-2,0],[0,1,1,4,4,0],[0,1,-1,8,-8,1]],dtype=np.float64)
BT2=np.array([[1,0,-1,0],[0,1,1,0],[0,-1,1,0],[0,1,0,-1]],dtype=np.float64)
G2=np.array([[1,0,0],[.5,.5,.5],[.5,-.5,.5],[0,0,1]])
AT2=np.array([[1,1,1,0],[0,1,-1,-1]],dtype=np.float64)
def wino(BT,G,AT,m,C,K,tiles,dt):
    a=BT.shape[0]
    d=rng.uniform(-1,1,(tiles,C,a,a)).astype(f32).astype(np.float64)
    g=rng.uniform(-1,1,(K,C,3,3)).astype(f32).astype(np.float64)
    # reference: direct correlation on each tile
    ref=np.zeros((tiles,K,m,m))
    for i in range(m):
        for j in range(m):
            ref[:,:,i,j]=np.einsum('tcrs,kcrs->tk',d[:,:,i:i+3,j:j+3],g)
    BTf,Gf,ATf=BT.astype(dt),G.astype(dt),AT.astype(dt)
    U=np.einsum('ir,kcrs,js->ijkc',Gf,g.astype(dt),Gf).astype(dt)
    V=np.einsum('ir,tcrs,js->ijct',BTf,d.astype(dt),BTf).astype(dt)
    M=np.einsum('ijkc,ijct->ijkt',U,V).astype(dt)
    Y=np.einsum('pi,ijkt,qj->tkpq',ATf,M,ATf).astype(dt)
    e=np.abs(Y.astype(np.float64)-ref)
    return e.max(), np.linalg.norm(Y-ref)/np.linalg.norm(ref)
u=2.0**-24
for C in (16,64,256,512):
    e2,r2=wino(BT2,G2,AT2,2,C,8,512,f32)
    e4,r4=wino(BT,G,AT,4,C,8,512,f32)
    tol=u*(108*C+1062*math.sqrt(C)); direct=4*u*9*C
    print(f"C={C}: F(2x2) max {e2:.2e} relL2 {r2:.1e} | F(4x4) max {e4:.2e} relL2 {r4:.1e} | F(2x2) tol {tol:.2e} direct tol {direct:.2e}")
