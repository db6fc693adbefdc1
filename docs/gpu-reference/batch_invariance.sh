nvidia-smi -L; PYTHONUNBUFFERED=1 python3 - <<'E' 2>&1 | grep -v -i warn | tee $OUT/batch_invariance.txt
import torch,json,transformers as T
torch.manual_seed(0)
c=T.LlamaConfig(vocab_size=1000,hidden_size=1024,intermediate_size=2816,num_hidden_layers=8,num_attention_heads=16,num_key_value_heads=4,initializer_range=0.05,pad_token_id=0,bos_token_id=1,eos_token_id=2)
base=T.LlamaForCausalLM(c).cuda().eval()
P=[torch.randint(5,1000,(int(n),)) for n in torch.randint(8,40,(16,))]
def gen(m,ps):
  L=max(len(p) for p in ps);ids=torch.zeros(len(ps),L,dtype=torch.long);am=torch.zeros_like(ids)
  for i,p in enumerate(ps):ids[i,L-len(p):]=p;am[i,L-len(p):]=1
  g=m.generate(input_ids=ids.cuda(),attention_mask=am.cuda(),max_new_tokens=24,min_new_tokens=24,do_sample=False,output_scores=True,return_dict_in_generate=True)
  s=torch.stack([x.float().log_softmax(-1) for x in g.scores],1);t=s.topk(2,-1).values
  return g.sequences[:,L:].cpu(),(t[...,0]-t[...,1]).cpu()
print(T.__version__,torch.__version__)
for dt in (torch.bfloat16,torch.float32):
 for attn in ("sdpa","eager"):
  m=base.to(dt)
  try:m.set_attn_implementation(attn)
  except Exception as e:print(e);m.config._attn_implementation=attn
  alone=[gen(m,[p]) for p in P];tb,_=gen(m,P);div=[];allg=torch.cat([g[0] for _,g in alone])
  for i,(ta,ga) in enumerate(alone):
   d=(ta[0]!=tb[i]).nonzero()
   if len(d):k=int(d[0]);div.append(round(float(ga[0,k]),4))
  r=dict(dtype=str(dt)[6:],attn=attn,prompts=16,tokens=24,diverged=len(div),first_diff_gaps=sorted(div),diverged_gap_ge_0_5=sum(g>=0.5 for g in div),steps=len(allg),steps_gap_lt_0_1=int((allg<0.1).sum()),steps_gap_lt_0_5=int((allg<0.5).sum()),median_gap=round(float(allg.median()),3))
  print(json.dumps(r))
E
