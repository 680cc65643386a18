#!/usr/bin/env python3
# Writes crates/server/src/proto/pointers.rs: the scalar fields that are Go pointers in upstream's
# types.go files of the groups vendored in crates/server/proto (needs the kubernetes/api and
# kubernetes/apimachinery checkouts at A and M below, the commits crates/server/proto/README.md names).
#   python3 scripts/gen-proto-pointers.py > crates/server/src/proto/pointers.rs
import re,glob,subprocess,os
A='/work/.mirror/kubernetes+api/repo'; M='/work/.mirror/kubernetes+apimachinery/repo'
P='crates/server/proto'
scalar={'string','int32','int64','bool','double','float','bytes','uint32','uint64'}
# proto scalar singular fields per message
proto={}
for f in glob.glob(P+'/**/*.proto',recursive=True):
    s=open(f).read(); pkg=re.search(r'^package (\S+);',s,re.M).group(1)
    for m in re.finditer(r'^message (\w+) \{(.*?)^\}',s,re.M|re.S):
        for fm in re.finditer(r'^\s*optional (\w+) (\w+) = \d+;',m.group(2),re.M):
            if fm.group(1) in scalar: proto[(pkg+'.'+m.group(1),fm.group(2))]=1
def gofiles(repo,d):
    out=subprocess.run(['git','-C',repo,'ls-tree','--name-only','HEAD',d+'/'],capture_output=True,text=True).stdout.split()
    return [x for x in out if x.endswith('.go') and not x.endswith('_test.go') and 'generated' not in x and 'zz_' not in x]
res=set()
for f in glob.glob(P+'/**/*.proto',recursive=True):
    s=open(f).read(); pkg=re.search(r'^package (\S+);',s,re.M).group(1)
    rel=os.path.dirname(f)[len(P)+1:]
    repo,d=(A,rel[len('k8s.io/api/'):]) if rel.startswith('k8s.io/api/') else (M,rel[len('k8s.io/apimachinery/'):])
    for g in gofiles(repo,d):
        src=subprocess.run(['git','-C',repo,'show','HEAD:'+g],capture_output=True,text=True).stdout
        for st in re.finditer(r'^type (\w+) struct \{(.*?)^\}',src,re.M|re.S):
            for line in st.group(2).split('\n'):
                fm=re.match(r'^\s+\w+\s+(\*)\S+\s+`.*protobuf:"[^"]*name=(\w+)',line)
                if fm:
                    key=(pkg+'.'+st.group(1),fm.group(2))
                    if key in proto: res.add(key)
print('//! Go pointer fields of scalar type in the vendored groups (generated from upstream\'s types.go')
print('//! next to the vendored .proto files): their zero value is a value, not an unset field.')
print()
print('/// (message, protobuf field name), sorted.')
print('pub const POINTER_SCALARS: &[(&str, &str)] = &[')
for m,f in sorted(res): print(f'    ("{m}", "{f}"),')
print('];')
