(function(){
const table=document.getElementById('q'), body=table.tBodies[0];
const rows=Array.from(body.rows);
function sortBy(col, dir){
  const ths=table.tHead.rows[0].cells;
  for(const th of ths){th.classList.remove('asc','desc');}
  ths[col].classList.add(dir>0?'asc':'desc');
  const key=r=>r.cells[col].dataset.v;
  const num=rows.every(r=>key(r)===''||!isNaN(parseFloat(key(r))));
  rows.sort((a,b)=>{
    const x=key(a), y=key(b);
    if(x===''&&y!=='') return 1; if(y===''&&x!=='') return -1;
    return (num?(parseFloat(x)-parseFloat(y)):x.localeCompare(y))*dir;
  });
  for(const r of rows) body.appendChild(r);
}
for(const [i,th] of Array.from(table.tHead.rows[0].cells).entries()){
  th.addEventListener('click',()=>sortBy(i, th.classList.contains('asc')?-1:1));
}
const text=document.getElementById('text'), slice=document.getElementById('slice'),
      only=document.getElementById('only'), count=document.getElementById('count');
function filter(){
  const t=text.value.toLowerCase(), s=slice.value, o=only.checked, attr=only.dataset.attr;
  let n=0;
  for(const r of rows){
    const show=(!t||r.cells[0].textContent.toLowerCase().includes(t)||
                r.cells[1].querySelector('summary').textContent.toLowerCase().includes(t))
      &&(!s||JSON.parse(r.dataset.slices).includes(s))&&(!o||r.dataset[attr]==='1');
    r.style.display=show?'':'none'; if(show) n++;
  }
  count.textContent=n+' of '+rows.length+' queries';
}
text.addEventListener('input',filter); slice.addEventListener('change',filter);
only.addEventListener('change',filter);
sortBy(parseInt(table.dataset.decide), 1); filter();
})();
