#!/usr/bin/env python3
# Code bytes per crate of a wasm module, from its name section (twiggy / cargo-bloat are not
# installed on the project machine). Use the raw module cargo writes, before wasm-bindgen:
#   python3 bench/wasm-sizes.py $CARGO_TARGET_DIR/wasm32-unknown-unknown/wasm-release/host_wasm.wasm 40
import sys, re, collections
data=open(sys.argv[1],'rb').read()
def leb(b,i):
    r=0;s=0
    while True:
        x=b[i];i+=1;r|=(x&0x7f)<<s;s+=7
        if x<0x80: return r,i
i=8; imports=0; bodies=[]; names={}; datasz=0
while i<len(data):
    sid=data[i];i+=1;size,i=leb(data,i);end=i+size
    if sid==2:
        n,j=leb(data,i)
        for _ in range(n):
            l,j=leb(data,j);j+=l;l,j=leb(data,j);j+=l;k=data[j];j+=1
            if k==0: _,j=leb(data,j); imports+=1
            elif k==1: j+=1; f,j=leb(data,j); _,j=leb(data,j); 
            elif k==2: f,j=leb(data,j); _,j=leb(data,j); 
            elif k==3: j+=2
    elif sid==10:
        n,j=leb(data,i)
        for _ in range(n):
            l,j=leb(data,j); bodies.append(l); j+=l
    elif sid==11: datasz+=size
    elif sid==0:
        l,j=leb(data,i); nm=data[j:j+l].decode(); j+=l
        if nm=='name':
            while j<end:
                sub=data[j];j+=1;sl,j=leb(data,j);se=j+sl
                if sub==1:
                    n,k=leb(data,j)
                    for _ in range(n):
                        idx,k=leb(data,k);l,k=leb(data,k);names[idx]=data[k:k+l].decode('utf8','replace');k+=l
                j=se
    i=end
def crate(n):
    m=re.match(r'_ZN(\d+)',n)
    if m:
        l=int(m.group(1)); s=n[len(m.group(0)):len(m.group(0))+l]
        c=s
    else:
        c=n.split('::')[0]
    if c.startswith('_<') or c.startswith('<'):
        c=c.lstrip('_<').split(' ')[0].split('::')[0]
    return c
agg=collections.Counter()
for k,sz in enumerate(bodies):
    nm=names.get(imports+k,'?')
    agg[crate(nm)]+=sz
tot=sum(bodies)
print('code',tot,'data',datasz)
for c,s in agg.most_common(int(sys.argv[2]) if len(sys.argv)>2 else 30): print(f'{s:>9} {c}')
