#sbx-zygote: a warm interpreter that forks each run's sandbox (sandbox/zygote.c)
import sys,os,_socket,gc,signal,struct,ctypes
def _sbx_zygote(hints):
    L=ctypes.CDLL(None,use_errno=True)
    L.syscall.restype=ctypes.c_long
    L.prctl(4,0,0,0,0)
    L.prctl(15,b'sbx-zygote',0,0,0)
    # The exec with ambient capabilities cleared the parent-death signal child.c set: again,
    # first, so a slot that dies (even by SIGKILL) takes its zygote with it from here on (before
    # this, the slot's end of our socket closing ends us at our first read).
    L.prctl(1,9,0,0,0)
    s=_socket.socket(_socket.AF_UNIX,_socket.SOCK_STREAM,0,3)
    def rx(sk,n):
        b=b''
        while len(b)<n:
            c=sk.recv(n-len(b))
            if not c:
                os._exit(0)
            b+=c
        return b
    # Each hinted script (read-only, outside /work: the service's runner and checker host) is
    # compiled once and what it imports at top level is imported here, each with its own
    # directory first on sys.path as when it runs; sys.path is then as the interpreter made it.
    pre={}
    p0=list(sys.path)
    for hint in hints:
        if not hint or hint.startswith('/work/') or not hint.endswith('.py'):
            continue
        d=os.path.dirname(hint)
        try:
            ro=os.statvfs(d).f_flag&os.ST_RDONLY
            st=os.stat(hint)
        except OSError:
            ro=0
        if not ro:
            continue
        try:
            with open(hint,'rb') as f:
                src=f.read()
            pre[hint]=((st.st_ino,st.st_size,st.st_mtime_ns),compile(src,hint,'exec'))
            sys.path[:]=[d]+p0[1:]
            for ln in src.decode('utf-8','replace').splitlines():
                w=ln.split()
                if len(w)>1 and w[0] in('import','from') and not ln[0].isspace():
                    for m in w[1].split(','):
                        if m and m[0]!='.':
                            try:
                                __import__(m)
                            except BaseException:
                                pass
        except BaseException:
            pre.pop(hint,None)
    sys.path[:]=p0
    # The filters' lengths come with the per-run chain in C (sandbox/zyg_spawn.c) as a sealed
    # memfd. It is loaded from a tmpfs of our own mount namespace, detached once it is mapped:
    # there is no /proc here to name the memfd by, and nothing of it stays visible.
    h,anc,_,_=s.recvmsg(8,_socket.CMSG_SPACE(4),_socket.MSG_CMSG_CLOEXEC)
    mf=[struct.unpack('i',dat[:4])[0] for lv,t,dat in anc if lv==_socket.SOL_SOCKET and t==_socket.SCM_RIGHTS and len(dat)>=4]
    if len(mf)!=1:
        os._exit(127)
    h+=rx(s,8-len(h)) if len(h)<8 else b''
    n1,n2=struct.unpack('II',h)
    fb=(rx(s,n1),rx(s,n2))
    if L.mount(b'sbx-zyg',b'/tmp',b'tmpfs',ctypes.c_ulong(2|4),b'size=1m,nr_inodes=4,mode=0700')<0:
        os._exit(127)
    so=b''
    while True:
        c=os.pread(mf[0],65536,len(so))
        if not c:
            break
        so+=c
    os.close(mf[0])
    with open('/tmp/zyg_spawn.so','wb') as f:
        f.write(so)
    Z=ctypes.PyDLL('/tmp/zyg_spawn.so')
    if L.umount2(b'/tmp',2)<0:
        os._exit(127)
    del so
    class G(ctypes.Structure):
        _fields_=[('fd',ctypes.c_int32*5),('zpidfd',ctypes.c_int32),('tmpo',ctypes.c_char*96),('shmo',ctypes.c_char*96),('flen',ctypes.c_uint32*2),('filter',ctypes.c_void_p*2),('argc',ctypes.c_uint32),('envc',ctypes.c_uint32),('slen',ctypes.c_uint32),('pad',ctypes.c_uint32),('strings',ctypes.c_void_p)]
    if Z.sbx_zyg_abi()!=ctypes.sizeof(G):
        os._exit(127)
    g=G()
    fbuf=[ctypes.create_string_buffer(x,len(x)) for x in fb]
    for i in (0,1):
        g.flen[i]=len(fb[i])
        g.filter[i]=ctypes.addressof(fbuf[i])
    g.zpidfd=os.pidfd_open(os.getpid())
    sp=Z.sbx_zyg_spawn
    sp.restype=ctypes.c_int
    sp.argtypes=[ctypes.c_void_p]
    gp=ctypes.addressof(g)
    # Everything P needs, made here once: in P each new object or import would be page faults.
    jb=Z.sbx_zyg_job
    jb.restype=ctypes.c_int
    jb.argtypes=[ctypes.c_void_p]
    import builtins,atexit
    from importlib.machinery import SourceFileLoader
    api=ctypes.pythonapi
    bf,ap,ac=api.PyOS_BeforeFork,api.PyOS_AfterFork_Parent,api.PyOS_AfterFork_Child
    for x in (bf,ap,ac):
        x.restype=None
        x.argtypes=[]
    pfx=list(sys.path)
    def comm(n):
        try:
            with open('/proc/self/comm','w') as f:
                f.write(n)
        except OSError:
            pass
    def reap():
        # each run's init is ours: reaped here, so its CPU (and its run's) is ours to count
        while True:
            try:
                if os.waitpid(-1,os.WNOHANG)[0]==0:
                    return
            except ChildProcessError:
                return
    pv=(g,gp,jb,pre,pfx,comm,builtins,SourceFileLoader)
    gc.collect()
    gc.freeze()
    s.sendall(b'r')
    while True:
        reap()
        fds=[]
        m=b''
        for n in (192,1):
            d,anc,_,_=s.recvmsg(n,_socket.CMSG_SPACE(4*4),_socket.MSG_CMSG_CLOEXEC)
            if len(d)!=n:
                os._exit(0)
            m+=d
            for lv,t,dat in anc:
                if lv==_socket.SOL_SOCKET and t==_socket.SCM_RIGHTS:
                    fds+=list(struct.unpack('%di'%(len(dat)//4),dat[:len(dat)//4*4]))
        if len(fds)!=5:
            for f in fds:
                os.close(f)
            continue
        for i in range(5):
            g.fd[i]=fds[i]
        g.tmpo=m[:96].split(b'\0')[0]
        g.shmo=m[96:].split(b'\0')[0]
        # The run's init I is cloned in C (zyg_spawn.c) and never comes back here; its program P
        # does, confined and with its job, as a fork of ours: Python's at-fork hooks run as for
        # os.fork (random reseeds).
        bf()
        r=sp(gp)
        if r==0:
            ac()
            s.detach()
            return _sbx_prog(*pv)
        ap()
        for f in fds:
            os.close(f)
def _sbx_prog(g,gp,job,pre,pfx,comm,builtins,SourceFileLoader):
    # P, confined (zyg_spawn.c; its signal dispositions are the zygote's again): ready ourselves
    # before the job, then wait for it in C.
    import atexit
    # What every job does, done once here on nothing: the pages it writes (reference counts, the
    # compiler's and the collector's state, the environment) are copied now, not in the job's
    # time (print(1): 206 -> 78 faults after the job, measured).
    os.environ.clear()
    try:
        exec(compile('pass','<string>','exec'),{'__builtins__':builtins})
        gc.collect()
        sys.stdout.flush()
        sys.stderr.flush()
    except BaseException:
        pass
    job(gp)
    comm('python3')
    argc,envc=g.argc,g.envc
    b=ctypes.string_at(g.strings,g.slen)
    v=[os.fsdecode(x) for x in b.split(b'\0')[:argc+envc]]
    os.environ.clear()
    for e in v[argc:]:
        k,_,x=e.partition('=')
        if k:
            os.environ[k]=x
    argv=v[:argc]
    sys.path[:]=pfx
    # PYTHONPATH (a package layer's, the only one a zygote's run may have: warm.c) goes where
    # the interpreter would have put it, after the script's directory
    if os.environ.get('PYTHONPATH'):
        sys.path[1:1]=[x for x in os.environ['PYTHONPATH'].split(':') if x]
    m=type(sys)('__main__')
    m.__builtins__=builtins
    if argv[0]=='-c':
        sys.argv=['-c']+argv[2:]
        sys.path[0]=''
        name='<string>'
        code=argv[1]
        m.__loader__=sys.modules['__main__'].__loader__
    else:
        sys.argv=argv
        name=os.path.abspath(argv[0])
        sys.path[0]=os.path.dirname(name)
        code=None
        try:
            st=os.stat(name)
            if name in pre and pre[name][0]==(st.st_ino,st.st_size,st.st_mtime_ns):
                code=pre[name][1]
            else:
                with open(name,'rb') as f:
                    code=f.read()
        except OSError as e:
            sys.stderr.write("%s: can't open file %r: [Errno %d] %s\n"%(sys.executable,name,e.errno,e.strerror))
            sys.stderr.flush()
            os._exit(2)
        m.__file__=name
        m.__cached__=None
        m.__loader__=SourceFileLoader('__main__',name)
    sys.modules['__main__']=m
    # our options (-u -S -B) stay, our -c, its code and the hints go
    sys.orig_argv=[sys.executable]+sys.orig_argv[1:sys.orig_argv.index('-c')]+argv
    for x in ('ctypes','ctypes._endian','struct','resource'):
        sys.modules.pop(x,None)
    return code,name,m.__dict__
def _sbx_run(code,name,g):
    if not isinstance(code,type(_sbx_run.__code__)):
        try:
            code=compile(code,name,'exec')
        except (SyntaxError,ValueError) as e:
            sys.excepthook(type(e),e.with_traceback(None),None)
            raise SystemExit(1)
    try:
        exec(code,g)
    except SystemExit:
        raise
    except BaseException as e:
        t=e.__traceback__.tb_next
        sys.excepthook(type(e),e.with_traceback(t),t)
        ki=isinstance(e,KeyboardInterrupt)
        del e,t
        if ki:
            import signal
            sys.stdout.flush()
            signal.signal(signal.SIGINT,signal.SIG_DFL)
            os.kill(os.getpid(),signal.SIGINT)
        raise SystemExit(1)
def _sbx_exit(e,old):
    # Python's exit, less the freeing of the zygote's own objects: after a fork every one of
    # them is a shared page, and freeing them all would copy every page (more CPU than a start).
    # What a program sees of its exit is kept: the exit code as Python makes it, non-daemon
    # threads joined, atexit run, its own modules' globals (__main__ and what it imported)
    # released so their __del__ and unclosed files' flushes run, then stdout and stderr flushed.
    c=e.code
    if c is None:
        c=0
    elif not isinstance(c,int):
        try:
            sys.stderr.write(str(c)+'\n')
        except BaseException:
            pass
        c=1
    del e
    t=sys.modules.get('threading')
    if t:
        try:
            t._shutdown()
        except BaseException:
            pass
    import atexit
    atexit._run_exitfuncs()
    for n in [n for n in sys.modules if n not in old]+['__main__']:
        m=sys.modules.get(n)
        d=getattr(m,'__dict__',None)
        if isinstance(d,dict) and d is not globals():
            try:
                d.clear()
            except BaseException:
                pass
    import gc
    gc.collect()
    for f in (sys.stdout,sys.stderr):
        try:
            if f:
                f.flush()
        except BaseException:
            c=120
    os._exit(c&0xff)
_sbx_j=_sbx_zygote(sys.argv[1:])
_sbx_old=set(sys.modules)
del _sbx_zygote,_sbx_prog
try:
    _sbx_run(*_sbx_j)
    raise SystemExit(0)
except SystemExit as _sbx_e:
    del _sbx_j
    _sbx_exit(_sbx_e,_sbx_old)
