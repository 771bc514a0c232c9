#sbx-warm: a pre-started interpreter waiting for its one job (sandbox/warm.c)
import sys,os,_socket
def _sbx_warm(hint):
    s=_socket.socket(_socket.AF_UNIX,_socket.SOCK_STREAM,0,3)
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
    def comm(n):
        try:
            with open('/proc/self/comm','w') as f:
                f.write(n)
        except OSError:
            pass
    comm('sbx-warm')
    s.sendall(b'r')
    h,anc,_,_=s.recvmsg(12,_socket.CMSG_SPACE(4))
    if len(h)!=12:
        os._exit(127)
    argc,envc,n=int.from_bytes(h[0:4],sys.byteorder),int.from_bytes(h[4:8],sys.byteorder),int.from_bytes(h[8:12],sys.byteorder)
    b=b''
    while len(b)<n:
        c=s.recv(n-len(b))
        if not c:
            os._exit(127)
        b+=c
    s.close()
    comm('python3')
    v=[os.fsdecode(x) for x in b.split(b'\0')[:argc+envc]]
    for lv,t,dat in anc:
        if lv==_socket.SOL_SOCKET and t==_socket.SCM_RIGHTS and len(dat)>=4:
            fd=int.from_bytes(dat[:4],sys.byteorder)
            os.dup2(fd,0)
            os.close(fd)
            try:
                os.lseek(0,0,0)
            except OSError:
                pass
    os.environ.clear()
    for e in v[argc:]:
        k,_,x=e.partition('=')
        if k:
            os.environ[k]=x
    if os.environ.get('PYTHONPATH'):
        sys.path[1:1]=[x for x in os.environ['PYTHONPATH'].split(':') if x]
    argv=v[:argc]
    os.chdir('/work')
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
    del pre,b,v,h,anc,s
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
_sbx_j=_sbx_warm(sys.argv[1] if len(sys.argv)>1 else '')
del _sbx_warm
_sbx_run(*_sbx_j)
