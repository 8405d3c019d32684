# A line-by-line Python transcription of src/conv/depthwise/depthwise.cu's host plan (make_plan) and
# both kernels (dw_nhwc_kernel's filter staging, register-reuse window, run-time loops, element /
# vector channel paths, epilogue; dw_any_kernel's two thread orders), run thread by thread on small
# problems in NCHW and NHWC, 4-channel vectors (every type since 6e15a67), alpha/beta, CONVOLUTION mode, against a direct
# float64 convolution. It checks the index arithmetic (every output written exactly once, every
# value right), not the CUDA code itself: keep it in step with depthwise.cu when the kernels change.
# Written while no GPU was available. Run: python3 scripts/model_depthwise.py (about 3 s, numpy).
import numpy as np, itertools, random
kQpt=4; kBlock=256; kMaxCtv=32; kSmem=48*1024

def out_size(i,f,pad,st,dil):
    span=(f-1)*dil+1; padded=i+2*pad
    return 0 if padded<span else (padded-span)//st+1

def packed(d, cl):  # d = n,c,h,w -> strides n,c,h,w
    n,c,h,w=d
    return [h*w*c,1,w*c,c] if cl else [c*h*w,h*w,w,1]

def reference(x,w,N,C,K,H,W,R,S,ph,pw,sh,sw,dh,dw,flip,P,Q):
    m=K//C; y=np.zeros((N,K,P,Q))
    for n,k,p,q in itertools.product(range(N),range(K),range(P),range(Q)):
        a=0.0
        for r in range(R):
            h=p*sh-ph+r*dh
            if h<0 or h>=H: continue
            for s in range(S):
                ww=q*sw-pw+s*dw
                if ww<0 or ww>=W: continue
                rr=R-1-r if flip else r; ss=S-1-s if flip else s
                a+=x[n,k//m,h,ww]*w[k,rr,ss]
        y[n,k,p,q]=a
    return y

def run(N,C,K,H,W,R,S,ph,pw,sh,sw,dh,dw,flip,nhwc,V,alpha,beta,aligned=True):
    P=out_size(H,R,ph,sh,dh); Q=out_size(W,S,pw,sw,dw)
    xl=np.random.uniform(-1,1,(N,C,H,W)); wl=np.random.uniform(-1,1,(K,R,S)); y0=np.random.uniform(-1,1,(N,K,P,Q))
    xs=packed((N,C,H,W),nhwc); ys=packed((N,K,P,Q),nhwc)
    ws=[R*S,1,S,1]  # k, c, r, s (KRSC == KCRS when C/G = 1)
    X=np.full(N*C*H*W,np.nan); Wb=np.full(K*R*S,np.nan); Y=np.full(N*K*P*Q,np.nan)
    for n,c,h,ww in itertools.product(range(N),range(C),range(H),range(W)): X[n*xs[0]+c*xs[1]+h*xs[2]+ww*xs[3]]=xl[n,c,h,ww]
    for k,r,s in itertools.product(range(K),range(R),range(S)): Wb[k*ws[0]+r*ws[2]+s*ws[3]]=wl[k,r,s]
    if beta!=0:
        for n,k,p,q in itertools.product(range(N),range(K),range(P),range(Q)): Y[n*ys[0]+k*ys[1]+p*ys[2]+q*ys[3]]=y0[n,k,p,q]
    # make_plan
    mult=K//C; chan_inner = xs[1]==1 and ys[1]==1
    rs=R*S; max_rs=kSmem//(V*4); max_ctv_smem = kSmem//(rs*V*4) if rs<=max_rs else 0
    cvecs=(C+V-1)//V; cap=min(kMaxCtv,max_ctv_smem)
    cblocks = (cvecs+cap-1)//cap if cap>=1 else 0
    fixed_width = dw==1 and S in (3,5) and sw in (1,2)
    nhwc_k = not (mult!=1 or not chan_inner or cap<1 or cblocks>65535)
    qblocks=(Q+kQpt-1)//kQpt
    used=[0]*(N*K*P*Q)
    if nhwc_k:
        ctv=(cvecs+cblocks-1)//cblocks; pix=max(1,kBlock//ctv)
        vec_io = C%V==0 and all(s_%V==0 for s_ in (xs[0],xs[2],xs[3],ys[0],ys[2],ys[3])) and aligned
        fs,fsw=(S,sw) if (vec_io and fixed_width) else (0,0)
        items=N*P*qblocks; grid_x=min((items+pix-1)//pix, 7)  # small grid to exercise grid-stride
        CT=ctv*V
        assert rs*CT*4<=kSmem
        for by in range(cblocks):
            cblock=by*CT
            w_s=[None]*(rs*CT)
            total=rs*CT; bdim=ctv*pix; kStage=4
            for tid in range(bdim):  # kStage loads per thread, then kStage shared stores
                for i0 in range(tid,total,kStage*bdim):
                    vals=[]
                    for u in range(kStage):
                        i=i0+u*bdim; v=0.0
                        if i<total:
                            c=i%CT; r_s=i//CT; r=r_s//S; s=r_s-r*S; k=cblock+c
                            if k<C:
                                rf=R-1-r if flip else r; sf=S-1-s if flip else s
                                v=Wb[k*ws[0]+rf*ws[2]+sf*ws[3]]
                        vals.append(v)
                    for u in range(kStage):
                        i=i0+u*bdim
                        if i<total:
                            assert w_s[i] is None; w_s[i]=vals[u]
            assert all(v is not None for v in w_s)
            for bx in range(grid_x):
                for tid in range(ctv*pix):
                    cv=tid%ctv; pi=tid//ctv; c0=cblock+cv*V
                    if c0>=C: continue
                    nvalid = C-c0 if C-c0<V else V
                    wt=cv*V
                    def load(base):
                        if vec_io:
                            assert base%V==0
                            return [X[base+i] for i in range(V)]
                        return [X[base+i] if i<nvalid else 0.0 for i in range(V)]
                    item=bx*pix+pi
                    while item<items:
                        # split_item (the 32-bit and 64-bit branches compute the same values)
                        rest=item//qblocks; q0=(item-rest*qblocks)*kQpt; p=rest%P; n=rest//P
                        acc=[[0.0]*V for _ in range(kQpt)]
                        if fs>0:
                            span=(kQpt-1)*fsw+fs; wi0=q0*fsw-pw
                            cols=0
                            for i in range(span):
                                if wi0+i>=0 and wi0+i<W: cols|=1<<i
                        for r in range(R):
                            h=p*sh-ph+r*dh
                            if h<0 or h>=H: continue
                            wrow=wt+r*S*CT
                            if fs>0:
                                xw=c0+n*xs[0]+wi0*xs[3]  # column 0 of the window (may be left of the image)
                                a=xw+h*xs[2]; raw=[]
                                for i in range(span):  # ld_nc_pred: zeros unless the column is in the image
                                    raw.append(load(a) if (cols>>i)&1 else [0.0]*V); a+=xs[3]
                                wr=[[w_s[wrow+s*CT+v] for v in range(V)] for s in range(fs)]
                                for i in range(span):
                                    xv=raw[i]
                                    for j in range(kQpt):
                                        s=i-j*fsw
                                        if 0<=s<fs:
                                            for v in range(V): acc[j][v]+=wr[s][v]*xv[v]
                            else:
                                xr=c0+n*xs[0]+h*xs[2]
                                for s in range(S):
                                    wv=[w_s[wrow+s*CT+v] for v in range(V)]
                                    ws0=q0*sw-pw+s*dw
                                    for j in range(kQpt):
                                        wi=ws0+j*sw
                                        if wi<0 or wi>=W: continue
                                        xv=load(xr+wi*xs[3])
                                        for v in range(V): acc[j][v]+=wv[v]*xv[v]
                        yp=n*ys[0]+p*ys[2]+c0
                        for j in range(kQpt):
                            q=q0+j
                            if q>=Q: break
                            yq=yp+q*ys[3]
                            for v in range(V):
                                if v<nvalid or vec_io:
                                    o=alpha*acc[j][v]
                                    if beta!=0: o+=beta*Y[yq+v]
                                    Y[yq+v]=o; used[yq+v]+=1
                        item+=grid_x*pix
        kind='nhwc fs%d vec%d'%(fs,vec_io)
    else:
        chan_fastest = ys[1]<ys[3]
        items=N*K*P*qblocks
        for item in range(items):
            # split_any_item_as (the unsigned and int64 branches compute the same values)
            if chan_fastest:
                r_=item//K; k=item-r_*K; r2=r_//qblocks; qb=r_-r2*qblocks; r3=r2//P; p=r2-r3*P; n=r3
            else:
                r_=item//qblocks; qb=item-r_*qblocks; r2=r_//P; p=r_-r2*P; r3=r2//K; k=r2-r3*K; n=r3
            kin = k if mult==1 else k//mult
            q0=qb*kQpt; xc=n*xs[0]+kin*xs[1]; wk=k*ws[0]
            acc=[0.0]*kQpt
            for r in range(R):
                h=p*sh-ph+r*dh
                if h<0 or h>=H: continue
                rf=R-1-r if flip else r; xr=xc+h*xs[2]; wr=wk+rf*ws[2]
                if fixed_width:
                    wv=[Wb[wr+((S-1-s) if flip else s)*ws[3]] for s in range(S)]
                    span=(kQpt-1)*sw+S; wi0=q0*sw-pw
                    for i in range(span):
                        wi=wi0+i
                        xv=X[xr+wi*xs[3]] if 0<=wi<W else 0.0
                        for j in range(kQpt):
                            s=i-j*sw
                            if 0<=s<S: acc[j]+=wv[s]*xv
                    continue
                for s in range(S):
                    sf=S-1-s if flip else s; wv=Wb[wr+sf*ws[3]]
                    ws0=q0*sw-pw+s*dw
                    for j in range(kQpt):
                        wi=ws0+j*sw
                        if 0<=wi<W: acc[j]+=wv*X[xr+wi*xs[3]]
            yp=n*ys[0]+k*ys[1]+p*ys[2]
            for j in range(kQpt):
                if q0+j<Q:
                    o=alpha*acc[j]
                    if beta!=0: o+=beta*Y[yp+(q0+j)*ys[3]]
                    Y[yp+(q0+j)*ys[3]]=o; used[yp+(q0+j)*ys[3]]+=1
        kind='any chan_fastest=%d fixed=%d'%(chan_fastest,fixed_width)
    ref=alpha*reference(xl,wl,N,C,K,H,W,R,S,ph,pw,sh,sw,dh,dw,flip,P,Q)+beta*y0
    got=np.zeros((N,K,P,Q))
    for n,k,p,q in itertools.product(range(N),range(K),range(P),range(Q)): got[n,k,p,q]=Y[n*ys[0]+k*ys[1]+p*ys[2]+q*ys[3]]
    ok = np.all(np.isfinite(got)) and np.allclose(got,ref,atol=1e-9) and all(u==1 for u in used)
    return ok, kind

random.seed(1); np.random.seed(1)
cases=[ # N,C,K,H,W,R,S,ph,pw,sh,sw,dh,dw,flip
 (1,32,32,9,13,3,3,1,1,1,1,1,1,0),(1,16,16,9,11,3,3,1,1,2,2,1,1,1),(1,3,3,7,9,3,3,1,1,2,2,1,1,0),
 (1,13,13,8,11,3,3,1,1,1,1,1,1,0),(1,37,37,5,13,3,3,0,0,1,1,1,1,0),(1,12,12,6,9,3,3,1,1,1,1,1,1,1),
 (1,40,40,9,9,5,5,2,2,1,1,1,1,1),(1,40,40,9,11,5,5,2,2,2,2,1,1,0),(1,24,24,11,11,5,5,1,1,3,3,1,1,0),
 (1,16,16,9,9,7,7,3,3,1,1,1,1,1),(1,16,16,5,21,1,7,0,3,1,1,1,1,0),(1,8,8,11,11,3,3,2,2,2,2,2,2,1),
 (1,8,8,7,7,3,3,3,3,1,1,1,1,0),(2,8,16,6,7,3,3,1,1,1,1,1,1,1),(1,3,6,7,7,5,5,2,2,2,2,1,1,0),
 (1,1,1,7,9,3,3,1,1,1,1,1,1,0),(1,4,4,45,45,41,41,0,0,1,1,1,1,1),(1,2,2,25,25,23,23,0,0,1,1,1,1,1),(1,264,264,3,6,3,3,1,1,1,1,1,1,0),
]
bad=0
for cs in cases:
    for nhwc in (False,True):
        for V in (4,):  # dw_nhwc_kernel: 4 channels per thread for every type (8 halves until 375877d)
            for ab in ((1.0,0.0),(0.5,0.75)):
                ok,kind=run(*cs,nhwc,V,*ab)
                if not ok: bad+=1; print('BAD',cs,nhwc,V,ab,kind)
    print(cs, 'ok' if bad==0 else bad, kind)
# misaligned
ok,kind=run(1,16,16,6,9,3,3,1,1,1,1,1,1,0,True,4,1.0,0.0,aligned=False); print('misaligned',ok,kind)
print('total bad',bad)
