#sbx-zygote: a warm interpreter that forks each run's sandbox (sandbox/zygote.c)
import sys,os,_socket,gc,signal,resource,struct,ctypes
def _sbx_zygote(hint):
    L=ctypes.CDLL(None,use_errno=True)
    L.syscall.restype=ctypes.c_long
    s=_socket.socket(_socket.AF_UNIX,_socket.SOCK_STREAM,0,3)
    def rx(sk,n):
        b=b''
        while len(b)<n:
            c=sk.recv(n-len(b))
            if not c:
                os._exit(0)
            b+=c
        return b
    pre=None
    if hint and not hint.startswith('/work/') and hint.endswith('.py'):
        d=os.path.dirname(hint)
        try:
            ro=os.statvfs(d).f_flag&os.ST_RDONLY
            st=os.stat(hint)
        except OSError:
            ro=0
        if ro:
            try:
                with open(hint,'rb') as f:
                    src=f.read()
                pre=(hint,(st.st_ino,st.st_size,st.st_mtime_ns),compile(src,hint,'exec'))
                sys.path[0]=d
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
                pre=None
    n1,n2=struct.unpack('II',rx(s,8))
    class H(ctypes.Structure):
        _fields_=[('v',ctypes.c_uint32),('p',ctypes.c_int)]
    class F(ctypes.Structure):
        _fields_=[('len',ctypes.c_ushort),('filter',ctypes.c_char_p)]
    fb=(rx(s,n1),rx(s,n2))
    flt=(H(0x20080522,0),(ctypes.c_uint32*6)(),[F(len(x)//8,x) for x in fb],fb)
    pfx=list(sys.path)
    def comm(n):
        try:
            with open('/proc/self/comm','w') as f:
                f.write(n)
        except OSError:
            pass
    L.prctl(4,0,0,0,0)
    L.prctl(15,b'sbx-zygote',0,0,0)
    # The exec with ambient capabilities cleared the parent-death signal child.c set: again,
    # so a slot that dies (even by SIGKILL) takes its zygote with it.
    L.prctl(1,9,0,0,0)
    zpid=os.getpid()
    def reap():
        # C lives as long as its run; reaped here, so its CPU (and its run's) is ours to count
        while True:
            try:
                if os.waitpid(-1,os.WNOHANG)[0]==0:
                    return
            except ChildProcessError:
                return
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
        try:
            pid=os.fork()
        except OSError:
            pid=-1
        if pid==0:
            os.close(s.detach())
            return _sbx_child(L,rx,flt,fds,m[:96].split(b'\0')[0],m[96:].split(b'\0')[0],pre,zpid,pfx,comm)
        for f in fds:
            os.close(f)
def _sbx_child(L,rx,flt,fds,tmpo,shmo,pre,zpid,pfx,comm):
    ctl,err,status,out,errout=fds
    def die(step):
        e=ctypes.get_errno()
        try:
            os.write(err,struct.pack('i120s',e,step.encode()[:119]))
        finally:
            os._exit(127)
    signal.signal(signal.SIGCHLD,signal.SIG_DFL)
    if L.prctl(1,9,0,0,0)<0 or os.getppid()!=zpid:
        os._exit(127)
    if L.unshare(0x00020000|0x20000000|0x08000000|0x04000000)<0:
        die('unshare run namespaces')
    try:
        ipid=os.fork()
    except OSError:
        die('fork init')
    if ipid==0:
        return _sbx_init(L,rx,flt,fds,tmpo,shmo,pre,pfx,comm,die)
    try:
        pfd=os.pidfd_open(ipid)
        k=_socket.socket(_socket.AF_UNIX,_socket.SOCK_STREAM,0,ctl)
        k.sendmsg([b'P'+struct.pack('i',ipid)],[(_socket.SOL_SOCKET,_socket.SCM_RIGHTS,struct.pack('i',pfd))])
        k.detach()
    except OSError:
        os._exit(127)
    os.closerange(0,65536)
    while True:
        try:
            os.waitpid(ipid,0x40000000)
            break
        except ChildProcessError:
            break
        except InterruptedError:
            pass
    os._exit(0)
def _sbx_init(L,rx,flt,fds,tmpo,shmo,pre,pfx,comm,die):
    ctl,err,status,out,errout=fds
    for sg in (signal.SIGINT,signal.SIGTERM,signal.SIGCHLD):
        signal.signal(sg,signal.SIG_DFL)
    L.prctl(1,9,0,0,0)
    k=_socket.socket(_socket.AF_UNIX,_socket.SOCK_STREAM,0,ctl)
    if rx(k,1)!=b'g':
        os._exit(127)
    if L.unshare(0x02000000)<0:
        die('unshare cgroup namespace')
    def mnt(src,dst,fs,fl,o):
        if L.mount(src,dst,fs,ctypes.c_ulong(fl),o)<0:
            die('mount '+dst.decode())
    mnt(b'proc',b'/proc',b'proc',2|4|8,b'hidepid=invisible,subset=pid')
    mnt(b'sbx-tmp',b'/tmp',b'tmpfs',2|4,tmpo)
    mnt(b'sbx-shm',b'/dev/shm',b'tmpfs',2|4,shmo)
    if L.sethostname(b'sandbox',7)<0:
        die('sethostname')
    sp=_socket.socketpair(_socket.AF_UNIX,_socket.SOCK_STREAM)
    pa,pb=sp[0].detach(),sp[1].detach()
    try:
        ppid=os.fork()
    except OSError:
        die('fork program')
    if ppid==0:
        k.detach()
        for f in (pa,ctl,status):
            os.close(f)
        return _sbx_prog(L,flt,pb,out,errout,err,pre,pfx,comm,die)
    for f in (pb,out,errout):
        os.close(f)
    if os.read(pa,1)!=b'r':
        os._exit(127)
    k.sendall(b'r')
    # struct sbx_job (internal.h; zygote.c asserts its size): the limits, then seven counts
    h,anc,_,_=k.recvmsg(104,_socket.CMSG_SPACE(4*4),_socket.MSG_CMSG_CLOEXEC)
    if len(h)==0:
        os._exit(0)
    while len(h)<104:
        h+=rx(k,104-len(h))
    lim=struct.unpack('@QQQIQQQIQ',h[:72])
    argc,envc,slen,ht,hs,hc,hl=struct.unpack('@IIIIIII',h[72:100])
    jf=[]
    for lv,t,dat in anc:
        if lv==_socket.SOL_SOCKET and t==_socket.SCM_RIGHTS:
            jf+=list(struct.unpack('%di'%(len(dat)//4),dat[:len(dat)//4*4]))
    if hc or hl or ht>1 or hs>1 or ht+hs!=len(jf) or argc<1 or argc+envc>512:
        die('receive job: not a zygote job')
    b=rx(k,slen) if slen else b''
    k.detach()
    tree=jf[0] if ht else -1
    fin=jf[ht] if hs else -1
    if tree>=0:
        if L.syscall(429,tree,b'',-100,b'/work',4)<0:
            die('attach work directory')
        os.close(tree)
    else:
        mnt(b'sbx-work',b'/work',b'tmpfs',2|4,b'mode=0755,nr_inodes=16384,size=%d'%lim[8])
    if lim[8]!=64<<20:
        mnt(None,b'/tmp',None,32|2|4,b'size=%d'%lim[8])
        mnt(None,b'/dev/shm',None,32|2|4,b'size=%d'%lim[8])
    # The job's own limits on the waiting program (as child_warm.c's hand-over does); its CPU
    # backstop counts what it used before the job.
    R=resource
    try:
        with open('/proc/%d/stat'%ppid) as f:
            used=sum(int(x) for x in f.read().rsplit(')',1)[1].split()[11:13])//os.sysconf('SC_CLK_TCK')
        c=lim[1]//1000+2+used
        for r,v in ((R.RLIMIT_FSIZE,lim[6]),(R.RLIMIT_NOFILE,lim[7]),(R.RLIMIT_NPROC,lim[3]+8),(R.RLIMIT_STACK,(8<<20,max(8<<20,lim[2]))),(R.RLIMIT_CPU,c)):
            R.prlimit(ppid,r,v if isinstance(v,tuple) else (v,v))
    except (OSError,ValueError):
        die('setrlimit')
    n=argc
    o=0
    for i in range(1,argc):
        if b.split(b'\0',i+1)[i] in (b'-u',b'-S',b'-B'):
            continue
        n=i
        break
    o=sum(len(x)+1 for x in b.split(b'\0',n)[:n])
    hdr=struct.pack('III',argc-n,envc,slen-o)
    try:
        q=_socket.socket(_socket.AF_UNIX,_socket.SOCK_STREAM,0,pa)
        q.sendmsg([hdr],[(_socket.SOL_SOCKET,_socket.SCM_RIGHTS,struct.pack('i',fin))] if fin>=0 else [])
        q.sendall(b[o:])
        q.detach()
    except OSError:
        die('hand the job to the program')
    if status!=3:
        os.dup2(status,3)
    os.closerange(4,65536)
    os.closerange(0,3)
    L.syscall(126,ctypes.byref(flt[0]),flt[1])
    while True:
        try:
            p,st=os.waitpid(-1,0x40000000)
        except ChildProcessError:
            os._exit(126)
        except InterruptedError:
            continue
        if p==ppid:
            break
    os.write(3,struct.pack('i',st))
    os._exit(0)
def _sbx_prog(L,flt,sk,out,errout,err,pre,pfx,comm,die):
    os.setsid()
    signal.signal(signal.SIGINT,signal.default_int_handler)
    fin=os.open('/dev/null',os.O_RDONLY|os.O_CLOEXEC)
    import fcntl
    src=[fcntl.fcntl(f,fcntl.F_DUPFD_CLOEXEC,3) for f in (fin,out,errout)]
    for i,f in enumerate(src):
        os.dup2(f,i)
    lo=3
    for f in sorted((err,sk)):
        os.closerange(lo,f)
        lo=f+1
    os.closerange(lo,65536)
    R=resource
    try:
        for r,v in ((R.RLIMIT_CORE,0),(R.RLIMIT_MEMLOCK,0),(R.RLIMIT_MSGQUEUE,0),(R.RLIMIT_RTPRIO,0),(R.RLIMIT_RTTIME,0),(R.RLIMIT_NICE,0),(R.RLIMIT_SIGPENDING,1024)):
            R.setrlimit(r,(v,v))
    except (OSError,ValueError):
        die('setrlimit')
    if L.prctl(28,0x1|0x2|0x4|0x8|0x20|0x40|0x80,0,0,0)<0:
        die('securebits')
    for cap in range(64):
        if L.prctl(24,cap,0,0,0)<0 and ctypes.get_errno()!=22:
            die('drop bounding capability')
    if L.prctl(47,4,0,0,0)<0:
        die('clear ambient capabilities')
    if L.syscall(126,ctypes.byref(flt[0]),flt[1])<0:
        die('capset')
    if L.prctl(38,1,0,0,0)<0:
        die('no_new_privs')
    if L.prctl(4,1,0,0,0)<0:
        die('dumpable')
    for x in flt[2]:
        if L.prctl(22,2,ctypes.byref(x),0,0)<0:
            die('seccomp')
    # Ready, with every confinement step taken: from here on only the job's own data.
    s=_socket.socket(_socket.AF_UNIX,_socket.SOCK_STREAM,0,sk)
    s.sendall(b'r')
    h,anc,_,_=s.recvmsg(12,_socket.CMSG_SPACE(4))
    if len(h)!=12:
        os._exit(127)
    argc,envc,n=struct.unpack('III',h)
    b=b''
    while len(b)<n:
        c=s.recv(n-len(b))
        if not c:
            os._exit(127)
        b+=c
    s.close()
    for lv,t,dat in anc:
        if lv==_socket.SOL_SOCKET and t==_socket.SCM_RIGHTS and len(dat)>=4:
            fd=struct.unpack('i',dat[:4])[0]
            os.dup2(fd,0)
            os.close(fd)
            try:
                os.lseek(0,0,0)
            except OSError:
                pass
    try:
        os.chdir('/work')
    except OSError:
        die('chdir /work')
    os.close(err)
    comm('python3')
    v=[os.fsdecode(x) for x in b.split(b'\0')[:argc+envc]]
    os.environ.clear()
    for e in v[argc:]:
        k,_,x=e.partition('=')
        if k:
            os.environ[k]=x
    argv=v[:argc]
    sys.path[:]=pfx
    import builtins
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
            if pre and pre[0]==name and pre[1]==(st.st_ino,st.st_size,st.st_mtime_ns):
                code=pre[2]
            else:
                with open(name,'rb') as f:
                    code=f.read()
        except OSError as e:
            sys.stderr.write("%s: can't open file %r: [Errno %d] %s\n"%(sys.executable,name,e.errno,e.strerror))
            sys.stderr.flush()
            os._exit(2)
        m.__file__=name
        m.__cached__=None
        from importlib.machinery import SourceFileLoader
        m.__loader__=SourceFileLoader('__main__',name)
    sys.modules['__main__']=m
    sys.orig_argv=[sys.executable]+sys.orig_argv[1:-3]+argv
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
_sbx_j=_sbx_zygote(sys.argv[1] if len(sys.argv)>1 else '')
_sbx_old=set(sys.modules)
del _sbx_zygote,_sbx_child,_sbx_init,_sbx_prog
try:
    _sbx_run(*_sbx_j)
    raise SystemExit(0)
except SystemExit as _sbx_e:
    del _sbx_j
    _sbx_exit(_sbx_e,_sbx_old)
